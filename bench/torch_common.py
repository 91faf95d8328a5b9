"""bench/torch_common.py - the pieces bench/torch_lra.py and bench/torch_workloads.py (the PyTorch twins of our
training steps) share: sinusoidal positions and the S4D kernel, each written as its counterpart in nn/ computes it."""
import math

import torch
import torch.nn as nn


def sinusoidal(T, D):  # nn/attention/positions.cpp: pe[t, 2i] = sin(t w_i), pe[t, 2i+1] = cos(t w_i), w_i = 10000^(-2i/D)
    ang = torch.arange(T, dtype=torch.float32)[:, None] / torch.pow(10000.0, torch.arange(0, D, 2).float() / D)
    pe = torch.zeros(T, D)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(ang), torch.cos(ang)
    return pe


class S4DKernel(nn.Module):
    """nn/ssm/s4d.h's kernel, S4D-Lin with ZOH: log_dt (H), inv_A_real (H, N2), A_imag (H, N2), B (H, N2) and
    C (channels, H, N2), complex ones stored as (..., 2) reals; K[c, h, l] = 2 Re sum_n C Bbar Abar^l."""

    def __init__(self, H, N, channels, dt_min=1e-3, dt_max=1e-1):
        super().__init__()
        N2 = N // 2
        self.log_dt = nn.Parameter(torch.rand(H) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))
        self.inv_A_real = nn.Parameter(torch.full((H, N2), math.log(0.5)))  # A_re = -exp(inv_A_real) = -1/2
        self.A_imag = nn.Parameter(math.pi * torch.arange(N2).float().repeat(H, 1))
        self.B = nn.Parameter(torch.view_as_real(torch.ones(H, N2, dtype=torch.cfloat)))
        self.C = nn.Parameter(torch.view_as_real(torch.randn(channels, H, N2, dtype=torch.cfloat)))

    def forward(self, L):  # -> (channels, H, L)
        A = -torch.exp(self.inv_A_real) + 1j * self.A_imag
        dtA = A * torch.exp(self.log_dt)[:, None]
        Ct = torch.view_as_complex(self.C) * (torch.exp(dtA) - 1.0) / A * torch.view_as_complex(self.B)  # C Bbar
        powers = torch.exp(dtA[:, :, None] * torch.arange(L, device=dtA.device))  # Abar^l, (H, N2, L)
        return 2 * torch.einsum("chn,hnl->chl", Ct, powers).real
