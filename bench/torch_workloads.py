"""bench/torch_workloads.py - the PyTorch reference of bench/bench_workloads.cpp's training steps.

One full training step = forward, backward, AdamW step; fp32; fixed seed; threads set by --threads.
Each workload is run in its own process (peak RSS is per process):

    /usr/bin/python3 bench/torch_workloads.py transformer_listops --len 512 --steps 5

prints one JSON line: workload, params, ms_per_step (median after warm-up), tokens_per_s, peak_rss_mb.

--precision bf16 wraps forward and loss in torch.autocast(device, dtype=torch.bfloat16), PyTorch's best CPU setting on a
processor with AVX512_BF16 (oneDNN's bf16 GEMMs; the parameters, their gradients and AdamW stay float32, the ops on
autocast's fp32 list - softmax, norms, losses - run in float32); the line then holds "precision": "bf16". A step that
fails under it (an op without a bf16 kernel) prints a line with "error" and no timing.
The models are built to have exactly the parameter counts the C++ side prints (same shapes).
Debian's torch 1.13 has no scaled_dot_product_attention; nn.TransformerEncoderLayer is its own best path.

On a GPU (PyTorch 2.x):

    python3 bench/torch_workloads.py transformer_listops --device cuda --batch 64 --len 1024

runs the model and the batch on the device; attention is F.scaled_dot_product_attention (the encoder layer and the
GPT block are written out around it, with the parameter shapes of their CPU twins: SDPAEncoderLayer, GPTBlock), each
timed step ends with torch.cuda.synchronize(), and the line also holds device, batch, model_gflop and gflops (the FLOP
model of bench_workloads.cpp, so the two sides' FLOP/s compare the same work), device_peak_mb
(torch.cuda.max_memory_allocated), the GPU's name and whether TF32 was allowed (it is turned off: fp32 on both sides,
as our cuBLAS calls). --batch and --len default to the CPU sizes. The CPU line is unchanged (bench/run_vs_torch.sh reads it).
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


class SDPAEncoderLayer(nn.Module):
    """nn.TransformerEncoderLayer(norm_first=True, activation="gelu") written out around F.scaled_dot_product_attention
    (the GPU path): the same parameters (in_proj (3d, d) + bias, out_proj, linear1, linear2, norm1, norm2), the same map:
    x = x + drop(out_proj(sdpa(q, k, v, dropout))); x = x + drop(linear2(drop(gelu(linear1(norm2(x))))))."""

    def __init__(self, d, heads, ffn, dropout):
        super().__init__()
        self.in_proj, self.out_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.linear1, self.linear2 = nn.Linear(d, ffn), nn.Linear(ffn, d)
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.heads, self.p, self.drop = heads, dropout, nn.Dropout(dropout)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.in_proj(self.norm1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))  # (B, NH, T, HS)
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.p if self.training else 0.0)
        x = x + self.drop(self.out_proj(y.transpose(1, 2).reshape(B, T, C)))
        return x + self.drop(self.linear2(self.drop(F.gelu(self.linear1(self.norm2(x))))))


class TransformerClassifier(nn.Module):
    """Embedding + sinusoidal positions, pre-LN encoder layers (GELU FFN), final LN, mean pool, linear head."""

    def __init__(self, vocab, d, heads, layers, ffn, classes, T, dropout, sdpa=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.register_buffer("pe", sinusoidal(T, d))
        self.layers = nn.ModuleList([
            SDPAEncoderLayer(d, heads, ffn, dropout) if sdpa else
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
    def __init__(self, d, heads, dropout, sdpa=False):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads, self.drop, self.p, self.sdpa = heads, nn.Dropout(dropout), dropout, sdpa

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        if self.sdpa:  # nanoGPT's flash path: causal, dropout on the weights inside the kernel
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.p if self.training else 0.0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.heads)
            att = att.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
            y = self.drop(F.softmax(att, dim=-1)) @ v
        x = x + self.drop(self.c_proj(y.transpose(1, 2).reshape(B, T, C)))
        return x + self.drop(self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)))))


class GPT(nn.Module):
    def __init__(self, vocab, T, d, heads, layers, dropout, sdpa=False):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(T, d)
        self.h = nn.ModuleList([GPTBlock(d, heads, dropout, sdpa) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        nn.init.normal_(self.wte.weight, std=0.02)  # GPT-2's init; N(0,1) would make tied logits huge
        nn.init.normal_(self.wpe.weight, std=0.01)

    def forward(self, x):
        h = self.wte(x) + self.wpe(torch.arange(x.shape[1], device=x.device))
        for b in self.h:
            h = b(h)
        return self.ln_f(h) @ self.wte.weight.t()  # tied


def build(name, L, B=0, sdpa=False):
    """(model, input, loss of the output, tokens per step, batch); B = 0: the workload's own batch (64 for lstm_bits,
    else 32). The batch is drawn on the CPU generator, as before, and moved with the model by the caller."""
    g = torch.Generator().manual_seed(0)
    B = B or (64 if name == "lstm_bits" else 32)
    if name == "transformer_listops":
        m = TransformerClassifier(20, 128, 4, 4, 512, 10, L, 0.1, sdpa)
        x, y = torch.randint(0, 20, (B, L), generator=g), torch.randint(0, 10, (B,), generator=g)
        return m, x, y, lambda out, y: F.cross_entropy(out, y), B * L, B
    if name == "s4d":
        m = S4DClassifier(256, 128, 64, 4, 10, 0.1)
        x, y = torch.randint(0, 256, (B, L), generator=g), torch.randint(0, 10, (B,), generator=g)
        return m, x, y, lambda out, y: F.cross_entropy(out, y), B * L, B
    if name == "s4d_official":
        m = S4DOfficial(256, 128, 64, 4, 10, 0.1)
        x, y = torch.randint(0, 256, (B, L), generator=g), torch.randint(0, 10, (B,), generator=g)
        return m, x, y, lambda out, y: F.cross_entropy(out, y), B * L, B
    if name == "lstm_bits":
        m = LSTMBits(8, 256, 2)
        x, y = torch.randn(B, L, 8, generator=g), torch.randint(0, 2, (B,), generator=g)
        return m, x, y, lambda out, y: F.cross_entropy(out, y), B * L, B
    if name == "gpt_char":
        m = GPT(256, L, 128, 4, 4, 0.1, sdpa)
        x = torch.randint(0, 256, (B, L + 1), generator=g)
        inp, tgt = x[:, :-1].contiguous(), x[:, 1:].contiguous()
        return m, inp, tgt, lambda out, tgt: F.cross_entropy(out.reshape(-1, 256), tgt.reshape(-1)), B * L, B
    raise SystemExit(f"unknown workload {name}")


def model_flops(name, model, L, B):
    """bench_workloads.cpp's FLOP model of one step (forward + backward = 3x forward, a multiply-add = 2):
    6 P_mm tokens (P_mm: 2-D weights outside embeddings and the S4D kernel; GPT adds its tied head V C),
    + 12 B T^2 C layers for attention, + 3 * 2 * 2.5 n log2 n * B H layers for S4D's FFTs (n = 2L)."""
    p_mm = sum(p.numel() for n, p in model.named_parameters()
               if p.dim() == 2 and not any(s in n for s in ("emb.", "wte.", "wpe.", "kernel.")))
    tokens = B * L
    if name == "transformer_listops":
        return 6.0 * p_mm * tokens + 12.0 * B * L * L * 128 * 4
    if name in ("s4d", "s4d_official"):
        n = 2.0 * L
        return 6.0 * p_mm * tokens + 3.0 * 2.0 * 2.5 * n * math.log2(n) * B * 128 * 4
    if name == "lstm_bits":
        return 6.0 * p_mm * tokens
    return 6.0 * (p_mm + 256 * 128) * tokens + 12.0 * B * L * L * 128 * 4  # gpt_char


DEFAULT_LEN = {"transformer_listops": 512, "s4d": 1024, "s4d_official": 1024, "lstm_bits": 100, "gpt_char": 256}


def tf32_flags():
    """Whether TF32 was allowed for matmuls and cuDNN (both sides should compute in fp32); None where this PyTorch
    no longer answers the old flags (2.9+ moved them to torch.backends.*.fp32_precision)."""
    out = {}
    for key, get in (("matmul_tf32", lambda: torch.backends.cuda.matmul.allow_tf32),
                     ("cudnn_tf32", lambda: torch.backends.cudnn.allow_tf32)):
        try:
            out[key] = bool(get())
        except Exception:
            out[key] = None
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload", choices=sorted(DEFAULT_LEN))
    ap.add_argument("--len", type=int, default=0)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=0, help="batch size (default: the workload's own, 32 or 64)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                    help="bf16: forward and loss under torch.autocast(dtype=torch.bfloat16)")
    a = ap.parse_args()
    cuda = a.device == "cuda"
    if cuda and not torch.cuda.is_available():
        raise SystemExit(f"torch_workloads: --device cuda, but torch {torch.__version__} sees no CUDA device")
    if cuda and not hasattr(F, "scaled_dot_product_attention"):
        raise SystemExit(f"torch_workloads: --device cuda needs F.scaled_dot_product_attention (PyTorch 2.0+), "
                         f"found torch {torch.__version__}")
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    if cuda:  # fp32 on both sides: our cuBLAS calls run without TF32, and cuDNN (the LSTM) would take it by default
        try:
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        except Exception:
            pass
    L = a.len or DEFAULT_LEN[a.workload]
    model, x, y, loss_fn, tokens, B = build(a.workload, L, a.batch, sdpa=cuda)
    dev = torch.device(a.device)
    model, x, y = model.to(dev), x.to(dev), y.to(dev)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    times = []
    bf16 = a.precision == "bf16"
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        try:
            with torch.autocast(a.device, dtype=torch.bfloat16, enabled=bf16):
                loss = loss_fn(model(x), y)
        except RuntimeError as e:  # e.g. torch 1.13's FFT under bf16 autocast
            print(json.dumps({"workload": a.workload, "len": L, "precision": a.precision, "error": str(e).splitlines()[0]}))
            return
        loss.backward()
        opt.step()
        if cuda:
            torch.cuda.synchronize()  # the time of the GPU's work, not of queueing it
        dt = time.perf_counter() - t0
        if i >= a.warmup:
            times.append(dt)
    ms = 1000 * statistics.median(times)
    out = {"workload": a.workload, "len": L, "params": sum(p.numel() for p in model.parameters()),
           "ms_per_step": round(ms, 2), "tokens_per_s": round(tokens / (ms / 1000), 1),
           "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
           "loss": float(loss)}
    if bf16:
        out["precision"] = "bf16"
    if cuda:
        gflop = model_flops(a.workload, model, L, B) / 1e9
        out.update({"device": "cuda", "batch": B, "model_gflop": round(gflop, 2), "gflops": round(gflop / (ms / 1000), 1),
                    "device_peak_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1),
                    "attention": "sdpa" if a.workload in ("transformer_listops", "gpt_char") else "none",
                    "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                    **tf32_flags()})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
