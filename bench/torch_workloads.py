"""bench/torch_workloads.py - the PyTorch reference of bench/bench_workloads.cpp's training steps.

One full training step = forward, backward, AdamW step; fp32; fixed seed; threads set by --threads.
Each workload is run in its own process (peak RSS is per process):

    /usr/bin/python3 bench/torch_workloads.py transformer_listops --len 512 --steps 5

prints one JSON line: workload, params, ms_per_step (median after warm-up), tokens_per_s, peak_rss_mb.
The models are built to have exactly the parameter counts the C++ side prints (same shapes).
Debian's torch 1.13 has no scaled_dot_product_attention; nn.TransformerEncoderLayer is its own best path.
"""
import argparse
import json
import math
import resource
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_common import S4DKernel, sinusoidal  # bench/torch_common.py


class TransformerClassifier(nn.Module):
    """Embedding + sinusoidal positions, pre-LN encoder layers (GELU FFN), final LN, mean pool, linear head."""

    def __init__(self, vocab, d, heads, layers, ffn, classes, T, dropout):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.register_buffer("pe", sinusoidal(T, d))
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(d, heads, ffn, dropout, activation="gelu", batch_first=True, norm_first=True)
            for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        h = self.emb(x) + self.pe[: x.shape[1]]
        for l in self.layers:
            h = l(h)
        return self.head(self.ln(h).mean(1))


class S4DBlock(nn.Module):
    def __init__(self, H, N, dropout):
        super().__init__()
        self.norm = nn.LayerNorm(H)
        self.kernel = S4DKernel(H, N, 1)  # one direction
        self.D = nn.Parameter(torch.randn(H))
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(H, 2 * H)

    def forward(self, x):  # x (B, L, H)
        z = self.norm(x).transpose(1, 2)  # (B, H, L)
        L = z.shape[-1]
        k = self.kernel(L)[0]  # (H, L)
        y = torch.fft.irfft(torch.fft.rfft(z, n=2 * L) * torch.fft.rfft(k, n=2 * L), n=2 * L)[..., :L]
        y = y + z * self.D[:, None]
        y = self.drop(F.gelu(y)).transpose(1, 2)
        return x + self.drop(F.glu(self.out(y), dim=-1))


class S4DClassifier(nn.Module):
    def __init__(self, vocab, H, N, layers, classes, dropout):
        super().__init__()
        self.emb = nn.Embedding(vocab, H)
        self.layers = nn.ModuleList([S4DBlock(H, N, dropout) for _ in range(layers)])
        self.ln = nn.LayerNorm(H)
        self.head = nn.Linear(H, classes)

    def forward(self, x):
        h = self.emb(x)
        for l in self.layers:
            h = l(h)
        return self.head(self.ln(h).mean(1))


class S4DOfficial(nn.Module):
    """The same S4D classifier written as state-spaces/s4 writes it (models/s4/s4d.py's S4D layer in example.py's
    S4Model): activations stay (B, H, L) between layers, the output projection is a 1x1 Conv1d to 2H with GLU over the
    channel dim, and only the layer norm transposes. One change keeps the parameter count equal to ours: the kernel
    keeps B (s4d.py folds B = 1 into C), via torch_common.S4DKernel; the map is the same."""

    def __init__(self, vocab, H, N, layers, classes, dropout):
        super().__init__()
        self.emb = nn.Embedding(vocab, H)
        self.kernels = nn.ModuleList([S4DKernel(H, N, 1) for _ in range(layers)])
        self.D = nn.ParameterList([nn.Parameter(torch.randn(H)) for _ in range(layers)])
        self.out = nn.ModuleList([nn.Conv1d(H, 2 * H, kernel_size=1) for _ in range(layers)])
        self.norms = nn.ModuleList([nn.LayerNorm(H) for _ in range(layers)])
        self.drop = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(H)
        self.head = nn.Linear(H, classes)

    def forward(self, x):
        u = self.emb(x).transpose(-1, -2)  # (B, H, L)
        L = u.shape[-1]
        for kernel, D, out, norm in zip(self.kernels, self.D, self.out, self.norms):
            z = norm(u.transpose(-1, -2)).transpose(-1, -2)  # prenorm
            k = kernel(L)[0]  # (H, L)
            y = torch.fft.irfft(torch.fft.rfft(z, n=2 * L) * torch.fft.rfft(k, n=2 * L), n=2 * L)[..., :L]
            y = self.drop(F.gelu(y + z * D[:, None]))
            u = u + self.drop(F.glu(out(y), dim=-2))
        return self.head(self.ln(u.transpose(-1, -2)).mean(1))


class LSTMBits(nn.Module):
    def __init__(self, inp, hidden, classes):
        super().__init__()
        self.lstm = nn.LSTM(inp, hidden, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        h, _ = self.lstm(x)
        return self.head(h[:, -1])


class GPTBlock(nn.Module):
    def __init__(self, d, heads, dropout):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads, self.drop = heads, nn.Dropout(dropout)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.heads)
        att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        y = self.drop(F.softmax(att, dim=-1)) @ v
        x = x + self.drop(self.c_proj(y.transpose(1, 2).reshape(B, T, C)))
        return x + self.drop(self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)))))


class GPT(nn.Module):
    def __init__(self, vocab, T, d, heads, layers, dropout):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(T, d)
        self.h = nn.ModuleList([GPTBlock(d, heads, dropout) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        nn.init.normal_(self.wte.weight, std=0.02)  # GPT-2's init; N(0,1) would make tied logits huge
        nn.init.normal_(self.wpe.weight, std=0.01)

    def forward(self, x):
        h = self.wte(x) + self.wpe(torch.arange(x.shape[1]))
        for b in self.h:
            h = b(h)
        return self.ln_f(h) @ self.wte.weight.t()  # tied


def build(name, L):
    g = torch.Generator().manual_seed(0)
    if name == "transformer_listops":
        m = TransformerClassifier(20, 128, 4, 4, 512, 10, L, 0.1)
        x, y = torch.randint(0, 20, (32, L), generator=g), torch.randint(0, 10, (32,), generator=g)
        return m, x, lambda out: F.cross_entropy(out, y), 32 * L
    if name == "s4d":
        m = S4DClassifier(256, 128, 64, 4, 10, 0.1)
        x, y = torch.randint(0, 256, (32, L), generator=g), torch.randint(0, 10, (32,), generator=g)
        return m, x, lambda out: F.cross_entropy(out, y), 32 * L
    if name == "s4d_official":
        m = S4DOfficial(256, 128, 64, 4, 10, 0.1)
        x, y = torch.randint(0, 256, (32, L), generator=g), torch.randint(0, 10, (32,), generator=g)
        return m, x, lambda out: F.cross_entropy(out, y), 32 * L
    if name == "lstm_bits":
        m = LSTMBits(8, 256, 2)
        x, y = torch.randn(64, L, 8, generator=g), torch.randint(0, 2, (64,), generator=g)
        return m, x, lambda out: F.cross_entropy(out, y), 64 * L
    if name == "gpt_char":
        m = GPT(256, L, 128, 4, 4, 0.1)
        x = torch.randint(0, 256, (32, L + 1), generator=g)
        inp, tgt = x[:, :-1], x[:, 1:]
        return m, inp, lambda out: F.cross_entropy(out.reshape(-1, 256), tgt.reshape(-1)), 32 * L
    raise SystemExit(f"unknown workload {name}")


DEFAULT_LEN = {"transformer_listops": 512, "s4d": 1024, "s4d_official": 1024, "lstm_bits": 100, "gpt_char": 256}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload", choices=sorted(DEFAULT_LEN))
    ap.add_argument("--len", type=int, default=0)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    L = a.len or DEFAULT_LEN[a.workload]
    model, x, loss_fn, tokens = build(a.workload, L)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    times = []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x))
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        if i >= a.warmup:
            times.append(dt)
    ms = 1000 * statistics.median(times)
    print(json.dumps({"workload": a.workload, "len": L, "params": sum(p.numel() for p in model.parameters()),
                      "ms_per_step": round(ms, 2), "tokens_per_s": round(tokens / (ms / 1000), 1),
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                      "loss": float(loss)}))


if __name__ == "__main__":
    main()
