"""bench/torch_pretrained_convs.py - the PyTorch twin of `pretrained_convs speed` (apps/pretrained_convs/speed.h).

The same encoder-decoder shell as nn/models/seq2seq.h, with the Transformer (T5 attention and relative position
bias) or the lightweight convolution (GLU block, softmax-normalised kernel shared per head, F.conv1d with groups = C)
as the mixer; one training step = forward, backward, AdamW step; fp32; threads set by --threads; random byte ids;
batch = tokens / L; target length 16. The parameter counts equal the C++ side's (printed for checking), with the
convolution's d_ff matched the same way (apps/pretrained_convs/model.h).

    /usr/bin/python3 bench/torch_pretrained_convs.py --model lightconv --lengths 64,128,256 --threads 2

prints one JSON line per length: model, L, batch, params, d_ff, ms_per_step (median of the timed steps).
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

V = 261 + 64  # ByteTokenizer with 64 sentinels (apps/pretrained_convs/data.h)


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


def bucket(rp, bidirectional, nb=32, max_distance=128):
    ret = torch.zeros_like(rp)
    if bidirectional:
        nb //= 2
        ret += (rp > 0).long() * nb
        rp = rp.abs()
    else:
        rp = -torch.clamp(rp, max=0)
    exact = nb // 2
    large = exact + (torch.log(rp.float().clamp(min=1) / exact) / math.log(max_distance / exact) * (nb - exact)).long()
    return ret + torch.where(rp < exact, rp, torch.clamp(large, max=nb - 1))


class Attention(nn.Module):
    def __init__(self, d, h, rel_bias, bidirectional):
        super().__init__()
        self.h, self.bi = h, bidirectional
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.rel = nn.Embedding(32, h) if rel_bias else None

    def bias(self, T, S):
        rp = torch.arange(S)[None, :] - torch.arange(T)[:, None]
        return self.rel(bucket(rp, self.bi)).permute(2, 0, 1)[None]

    def forward(self, x, kv, bias, causal):
        B, T, C = x.shape
        S = kv.shape[1]
        q = self.q(x).view(B, T, self.h, -1).transpose(1, 2)
        k = self.k(kv).view(B, S, self.h, -1).transpose(1, 2)
        v = self.v(kv).view(B, S, self.h, -1).transpose(1, 2)
        s = q @ k.transpose(-1, -2)
        if bias is not None:
            s = s + bias
        if causal:
            s = s.masked_fill(torch.ones(T, S, dtype=torch.bool).triu(1), -1e9)
        return self.o((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))


class LightConv(nn.Module):
    def __init__(self, d, h, K, causal):
        super().__init__()
        self.h, self.K, self.causal = h, K, causal
        self.input_linear, self.output_linear = nn.Linear(d, 2 * d), nn.Linear(d, d)
        self.weight = nn.Parameter(torch.randn(h, 1, K) * 0.1)

    def forward(self, x):
        B, L, C = x.shape
        K = self.K
        pl = K - 1 if self.causal else (K - 1) // 2
        g = F.glu(self.input_linear(x), dim=-1).transpose(1, 2)
        w = F.softmax(self.weight.view(self.h, K), -1).repeat_interleave(C // self.h, 0).view(C, 1, K)
        y = F.conv1d(F.pad(g, (pl, K - 1 - pl)), w, groups=C).transpose(1, 2)
        return self.output_linear(y)


class Block(nn.Module):
    def __init__(self, model, d, ff, h, K, decoder, first):
        super().__init__()
        self.model, self.decoder = model, decoder
        self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
        if model == "transformer":
            self.mix = Attention(d, h, first, not decoder)
        else:
            self.mix = LightConv(d, h, K, decoder)
        if decoder:
            self.nx, self.cross = RMSNorm(d), Attention(d, h, False, True)
        self.wi, self.wo = nn.Linear(d, ff, bias=False), nn.Linear(ff, d, bias=False)

    def forward(self, h, bias, enc=None):
        n = self.n1(h)
        h = h + (self.mix(n, n, bias, self.decoder) if self.model == "transformer" else self.mix(n))
        if self.decoder:
            h = h + self.cross(self.nx(h), enc, None, False)
        return h + self.wo(F.relu(self.wi(self.n2(h))))


class Seq2Seq(nn.Module):
    def __init__(self, model, d=64, ff=256, layers=2, dec_layers=2, h=4, K=7):
        super().__init__()
        self.shared = nn.Embedding(V, d)
        self.enc = nn.ModuleList(Block(model, d, ff, h, K, False, i == 0) for i in range(layers))
        self.dec = nn.ModuleList(Block(model, d, ff, h, K, True, i == 0) for i in range(dec_layers))
        self.en, self.dn, self.d, self.model = RMSNorm(d), RMSNorm(d), d, model

    def forward(self, ids, labels):
        h = self.shared(ids)
        S = ids.shape[1]
        bias = self.enc[0].mix.bias(S, S) if self.model == "transformer" else None
        for b in self.enc:
            h = b(h, bias)
        enc = self.en(h)
        dec_in = torch.cat([torch.zeros_like(labels[:, :1]), labels[:, :-1]], 1)
        g = self.shared(dec_in)
        T = g.shape[1]
        bias = self.dec[0].mix.bias(T, T) if self.model == "transformer" else None
        for b in self.dec:
            g = b(g, bias, enc)
        logits = (self.dn(g) * self.d ** -0.5) @ self.shared.weight.t()
        return F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1))


def count(model, **kw):
    return sum(p.numel() for p in Seq2Seq(model, **kw).parameters())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="lightconv", choices=["transformer", "lightconv"])
    ap.add_argument("--lengths", default="64,128,256,512,1024,2048,4096")
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--target", type=int, default=16)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--ff", type=int, default=256)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kernel", type=int, default=7)
    ap.add_argument("--min-seconds", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    kw = dict(d=a.d, layers=a.layers, dec_layers=a.layers, h=a.heads, K=a.kernel)
    ff = a.ff
    if a.model != "transformer":  # the C++ side's matching: P(ff) linear in ff
        target = count("transformer", ff=a.ff, **kw)
        b = 2 * a.d * 2 * a.layers
        base = count(a.model, ff=1, **kw) - b
        ff = max(1, round((target - base) / b))
    for L in [int(x) for x in a.lengths.split(",")]:
        B = max(1, a.tokens // L)
        m = Seq2Seq(a.model, ff=ff, **kw)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        ids = torch.randint(5, 261, (B, L))
        labels = torch.randint(5, 261, (B, a.target))

        def step():
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            m(ids, labels).backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opt.step()
            return time.perf_counter() - t0

        step()
        ts = []
        while len(ts) < 2 or sum(ts) < a.min_seconds:
            ts.append(step())
        print(json.dumps({"model": a.model, "L": L, "batch": B, "params": sum(p.numel() for p in m.parameters()), "d_ff": ff,
                          "ms_per_step": 1000 * statistics.median(ts)}), flush=True)


if __name__ == "__main__":
    main()
