"""bench/torch_lra.py - the PyTorch twin of `lra_benchmark speed`: one LRA cell's training step, timed.

    /usr/bin/python3 bench/torch_lra.py --preset tiny --task listops --model s4d \
        --shape '{"vocab": 18, "features": 0, "classes": 10, "max_len": 256, "two_tower": false}'

The cell's settings are resolved from the same preset file as apps/lra_benchmark/config.cpp resolves them
(CellConfig's defaults < defaults < tasks_cfg < models_cfg < cells_cfg < --set), for the scratch regime's
fine-tuning. The task's shape comes from `lra_benchmark speed`'s JSON line ("shape"), since this script cannot
read our datasets; bench/run_lra_vs_torch.sh passes it on. The model is apps/lra_benchmark/model.h's, layer by
layer, with the same parameter shapes (so the same count); one full training step = zero grad, forward,
cross-entropy, backward, gradient clipping, AdamW with the app's parameter groups; fp32; every position real.
Prints one JSON line: preset, task, model, params, batch, seq_len, ms_per_step (median after warm-up),
steps_per_s, peak_rss_mb, and "notes" where the computation is not the same algorithm as ours.
Debian's torch 1.13 has no scaled_dot_product_attention: attention is written out as a PyTorch user would.
"""
import argparse
import json
import math
import os
import resource
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_common import S4DKernel, sinusoidal  # bench/torch_common.py

# ---------------------------------------------------------------------------------------------------------------
# configuration, as apps/lra_benchmark/config.{h,cpp}

# CellConfig's built-in defaults (config.h) of the fields a training step uses; a preset may set any other field.
DEFAULTS = {
    "d_model": 64, "layers": 2, "heads": 4, "ffn_mult": 2, "d_state": 64, "dropout": 0.1,
    "norm": "layer", "prenorm": True, "pos": "rotary", "window": 0, "pool": "mean",
    "batch": 32, "lr": 1e-3, "ssm_lr": 1e-3, "weight_decay": 0.05, "clip": 1.0, "seed": 0, "layer_cfg": "",
}
SSM_MODELS = ("s4", "s4d", "s4d_minimal", "dlr")


def load_preset(name_or_path):
    is_file = "/" in name_or_path or name_or_path.endswith(".json")
    here = os.path.dirname(os.path.abspath(__file__))
    path = name_or_path if is_file else os.path.join(here, "..", "apps", "lra_benchmark", "presets", name_or_path + ".json")
    with open(path) as f:
        return json.load(f)


def parse_set(text):
    """--set field=value: the value is JSON if it parses, else a bare string (as config.cpp)."""
    key, value = text.split("=", 1)
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def resolve_cell(preset, task, model, sets):
    """Later wins: defaults < preset defaults < tasks_cfg < models_cfg < cells_cfg < --set."""
    c = dict(DEFAULTS)
    c.update(preset.get("defaults", {}))
    c.update(preset.get("tasks_cfg", {}).get(task, {}))
    c.update(preset.get("models_cfg", {}).get(model, {}))
    c.update(preset.get("cells_cfg", {}).get(task + "/" + model, {}))
    c.update(parse_set(s) for s in sets)
    c["task"], c["model"] = task, model
    return c


def mixer_options(c):
    """The registry options model.cpp's mixer_spec passes (scratch regime: not causal), then layer_cfg over them."""
    if c["model"] == "transformer":
        o = {"heads": c["heads"], "dropout": c["dropout"], "causal": False, "rotary": c["pos"] == "rotary"}
        if c["window"] > 0:
            o["window"] = c["window"]
    elif c["model"] == "s4d":
        o = {"d_state": c["d_state"], "dropout": c["dropout"], "bidirectional": True}
    else:
        raise SystemExit(f"torch_lra.py: model '{c['model']}' has no PyTorch twin here (transformer and s4d do)")
    o.update(json.loads(c["layer_cfg"]) if c["layer_cfg"] else {})
    return o


# ---------------------------------------------------------------------------------------------------------------
# the model, as apps/lra_benchmark/model.cpp and the registry layers it uses

def make_dropout(p):
    return nn.Dropout(p) if p > 0 else nn.Identity()  # ours skips a dropout of 0 altogether


def rotary(x):
    """RoPE as nn/attention/positions.cpp: interleaved pairs (x[2i], x[2i+1]) of each head vector, x (B, NH, T, HS),
    rotated by the angle t theta_i, theta_i = 10000^(-2i/HS)."""
    T, HS = x.shape[-2:]
    theta = torch.pow(10000.0, -torch.arange(0, HS, 2, dtype=torch.float32) / HS)
    ang = torch.arange(T, dtype=torch.float32)[:, None] * theta  # (T, HS/2)
    cos, sin = ang.cos(), ang.sin()
    xe, xo = x[..., 0::2], x[..., 1::2]
    return torch.stack([xe * cos - xo * sin, xe * sin + xo * cos], dim=-1).flatten(-2)


class Attention(nn.Module):
    """nn/attention/attention.h's MultiheadAttention: in_proj (3C, C) + bias, out_proj (C, C) + bias; key mask; -1e9 fill."""

    def __init__(self, d, heads, dropout=0.0, causal=False, rotary=False, window=0, fused=False):
        super().__init__()
        self.in_proj, self.out_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.heads, self.causal, self.rotary, self.window = heads, causal, rotary, window
        self.drop = make_dropout(dropout)
        # fused (ours: online softmax, no T x T matrix) has no counterpart in torch 1.13: the composed path runs

    def forward(self, x, mask):  # x (B, T, C), mask (B, T) 1 = real
        B, T, C = x.shape
        q, k, v = self.in_proj(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))  # (B, NH, T, HS)
        if self.rotary:
            q, k = rotary(q), rotary(k)
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.heads)  # (B, NH, T, T)
        allowed = mask[:, None, None, :].bool()
        t = torch.arange(T)
        if self.window > 0:
            # Local attention the way a PyTorch user writes it: the full T x T scores with a band mask
            # |t - s| <= window. Ours computes only the band's key blocks (the blocked kernel: O(T window), not O(T^2)).
            allowed = allowed & ((t[:, None] - t[None, :]).abs() <= self.window)
        if self.causal:
            allowed = allowed & (t[None, :] <= t[:, None])
        weights = self.drop(F.softmax(scores.masked_fill(~allowed, -1e9), dim=-1))
        return self.out_proj((weights @ v).transpose(1, 2).reshape(B, T, C))


class S4D(nn.Module):
    """nn/ssm/s4d.h's layer: y = K * u + D u by FFT of length 2L (bidirectional: the second kernel runs on the
    reversed sequence, as state-spaces/s4), then GELU, dropout, output_linear (H -> 2H) and GLU."""

    def __init__(self, d, d_state=64, dropout=0.0, bidirectional=False, init="lin", disc="zoh", dt_min=1e-3,
                 dt_max=1e-1, chunk=256):  # chunk: ours blocks the Vandermonde product; nothing to do here
        super().__init__()
        if init != "lin" or disc != "zoh":
            raise SystemExit(f"torch_lra.py: s4d init={init} disc={disc} not mirrored (lin/zoh are)")
        self.bidirectional = bidirectional
        self.kernel = S4DKernel(d, d_state, 2 if bidirectional else 1, dt_min, dt_max)
        self.D = nn.Parameter(torch.randn(d))
        self.dropout = make_dropout(dropout)
        self.output_linear = nn.Linear(d, 2 * d)

    def forward(self, x, mask):  # x (B, L, H)
        u = (x * mask[..., None]).transpose(1, 2)  # (B, H, L)
        L = u.shape[-1]
        k = self.kernel(L)
        if self.bidirectional:  # K0 in [0, L), K1 reversed in [L, 2L)
            k = F.pad(k[0], (0, L)) + F.pad(k[1].flip(-1), (L, 0))
        else:
            k = k[0]
        y = torch.fft.irfft(torch.fft.rfft(u, n=2 * L) * torch.fft.rfft(k, n=2 * L), n=2 * L)[..., :L]
        y = y + u * self.D[:, None]
        y = self.dropout(F.gelu(y)).transpose(1, 2)  # (B, L, H)
        return F.glu(self.output_linear(y), dim=-1)


class FeedForward(nn.Module):  # nn/layers.h: fc2(dropout(gelu(fc1(x))))
    def __init__(self, d, hidden, p):
        super().__init__()
        self.fc1, self.fc2, self.drop = nn.Linear(d, hidden), nn.Linear(hidden, d), make_dropout(p)

    def forward(self, x):
        return self.fc2(self.drop(F.gelu(self.fc1(x))))


def make_norm(c):
    return nn.BatchNorm1d(c["d_model"]) if c["norm"] == "batch" else nn.LayerNorm(c["d_model"])


def apply_norm(norm, x):  # BatchNorm1d normalises the channels of (B, C, L): move D there and back
    return norm(x.transpose(1, 2)).transpose(1, 2) if isinstance(norm, nn.BatchNorm1d) else norm(x)


class Block(nn.Module):
    """model.cpp's Block: x + drop(mixer(norm(x))), then x + drop(ffn(norm(x))) unless the mixer is an SSM."""

    def __init__(self, c):
        super().__init__()
        d, o = c["d_model"], mixer_options(c)
        self.mixer = Attention(d, **o) if c["model"] == "transformer" else S4D(d, **o)
        self.norm1, self.prenorm = make_norm(c), c["prenorm"]
        self.ffn = None
        if c["model"] not in SSM_MODELS and c["ffn_mult"] > 0:
            self.norm2, self.ffn = make_norm(c), FeedForward(d, d * c["ffn_mult"], c["dropout"])
        self.drop = make_dropout(c["dropout"])

    def forward(self, x, mask):
        if self.prenorm:
            x = x + self.drop(self.mixer(apply_norm(self.norm1, x), mask))
            if self.ffn:
                x = x + self.drop(self.ffn(apply_norm(self.norm2, x)))
        else:
            x = apply_norm(self.norm1, x + self.drop(self.mixer(x, mask)))
            if self.ffn:
                x = apply_norm(self.norm2, x + self.drop(self.ffn(x)))
        return x


class LraModel(nn.Module):
    """model.h's backbone and classification heads (the pretraining head is not part of the fine-tuned model)."""

    def __init__(self, c, shape):
        super().__init__()
        D = c["d_model"]
        self.c, self.two_tower = c, shape["two_tower"]
        if shape["vocab"] > 0:
            self.embed = nn.Embedding(shape["vocab"] + 1, D)  # +1: the [mask] id of masked self-pretraining
        else:
            self.in_proj = nn.Linear(shape["features"] + 1, D)  # +1: the mask channel
        transformer = c["model"] == "transformer"
        self.pos = nn.Parameter(0.02 * torch.randn(shape["max_len"], D)) if transformer and c["pos"] == "learned" else None
        self.register_buffer("sinusoid", sinusoidal(shape["max_len"], D) if transformer and c["pos"] == "sinusoidal" else None)
        self.blocks = nn.ModuleList([Block(c) for _ in range(c["layers"])])
        self.final_norm, self.drop = make_norm(c), make_dropout(c["dropout"])
        if self.two_tower:
            self.head_hidden = nn.Linear(4 * D, D)
        self.head = nn.Linear(D, shape["classes"])

    def encode(self, x, mask):  # tokens (B, L) or features (B, L, F+1) -> (B, L, D)
        h = self.embed(x) if hasattr(self, "embed") else self.in_proj(x)
        L = h.shape[1]
        if self.pos is not None:
            h = h + self.pos[:L]
        if self.sinusoid is not None:
            h = h + self.sinusoid[:L]
        h = self.drop(h)
        for block in self.blocks:
            h = block(h, mask)
        return apply_norm(self.final_norm, h)

    def pool(self, h, mask):
        if self.c["pool"] == "last":  # the last real position of each sequence
            last = (mask * torch.arange(mask.shape[1])).argmax(1)
            return h[torch.arange(h.shape[0]), last]
        return (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)  # masked mean

    def forward(self, a, mask_a, b=None, mask_b=None):
        pa = self.pool(self.encode(a, mask_a), mask_a)
        if not self.two_tower:
            return self.head(pa)
        pb = self.pool(self.encode(b, mask_b), mask_b)
        return self.head(F.gelu(self.head_hidden(torch.cat([pa, pb, pa * pb, pa - pb], dim=1))))


# ---------------------------------------------------------------------------------------------------------------
# the training step, as the harness's run_phase (apps/common/phase.cpp) takes it for apps/lra_benchmark

SSM_PARAMS = ("kernel.log_dt", "kernel.inv_dt", "kernel.inv_A_real", "kernel.log_A_real", "kernel.A_real",
              "kernel.A_imag", "kernel.B", "kernel.P", "kernel.Lambda")
NO_DECAY = ("norm", "ln", "bias", "embed", "wpe", "wte")


def param_groups(model, c):
    """optim/param_groups.h: SSM parameters -> ssm_lr, no decay; 1-D or norm/bias/embedding -> no decay."""
    default, no_decay, ssm = [], [], []
    for name, p in model.named_parameters():
        if any(s in name for s in SSM_PARAMS):
            ssm.append(p)
        elif p.dim() <= 1 or any(s in name for s in NO_DECAY):
            no_decay.append(p)
        else:
            default.append(p)
    groups = [{"params": default}, {"params": no_decay, "weight_decay": 0.0},
              {"params": ssm, "lr": c["ssm_lr"], "weight_decay": 0.0}]
    return [g for g in groups if g["params"]]


def random_inputs(shape, B, L, g):
    """A batch of random inputs, every position real (as lra_benchmark speed feeds them)."""
    mask = torch.ones(B, L)
    if shape["vocab"] > 0:
        return torch.randint(0, shape["vocab"], (B, L), generator=g), mask
    features = torch.cat([torch.randn(B, L, shape["features"], generator=g), torch.zeros(B, L, 1)], dim=2)
    return features, mask


def notes_for(c):
    """Where this twin runs a different algorithm than ours (the parameters are the same)."""
    o, notes = mixer_options(c), []
    if c["model"] == "transformer" and o.get("window", 0) > 0:
        notes.append(f"window {o['window']}: full T x T scores with a band mask "
                     "(ours: the band's key blocks on the blocked kernel)")
    if c["model"] == "transformer" and o.get("fused"):
        notes.append("fused: torch 1.13 has no fused attention on CPU; composed attention (ours: online softmax)")
    return notes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="tiny", help="preset name (apps/lra_benchmark/presets) or a JSON file")
    ap.add_argument("--task", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--shape", required=True, help="the TaskShape JSON object `lra_benchmark speed` prints")
    ap.add_argument("--set", action="append", default=[], help="override a field: --set batch=8 (repeatable)")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    preset = load_preset(a.preset)
    c = resolve_cell(preset, a.task, a.model, a.set)
    shape = json.loads(a.shape)
    torch.manual_seed(c["seed"])
    torch.set_num_threads(a.threads)

    model = LraModel(c, shape)
    model.train()
    opt = torch.optim.AdamW(param_groups(model, c), lr=c["lr"], weight_decay=c["weight_decay"])
    B, L = c["batch"], shape["max_len"]
    g = torch.Generator().manual_seed(c["seed"] + 1)
    x_a, mask_a = random_inputs(shape, B, L, g)
    x_b, mask_b = random_inputs(shape, B, L, g) if shape["two_tower"] else (None, None)
    y = torch.randint(0, shape["classes"], (B,), generator=g)

    times = []
    for step in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x_a, mask_a, x_b, mask_b), y)
        loss.backward()
        if c["clip"] > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), c["clip"])
        opt.step()
        loss.item()
        if step >= a.warmup:
            times.append(time.perf_counter() - t0)
    ms = 1000 * statistics.median_high(times)  # as ours: the upper one of an even count
    name = os.path.splitext(os.path.basename(a.preset))[0]
    print(json.dumps({"preset": name, "task": a.task, "model": a.model,
                      "params": sum(p.numel() for p in model.parameters()), "batch": B, "seq_len": L,
                      "ms_per_step": round(ms, 2), "steps_per_s": round(1000 / ms, 2),
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 2),
                      "notes": notes_for(c)}))


if __name__ == "__main__":
    main()
