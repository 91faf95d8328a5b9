// nn/ssm/ssm_ops.h - the fused primitives of the state-space family: the SSM convolution and the diagonal
// (Vandermonde) kernels, each a Node with a hand-written forward and backward. The layers in nn/ssm/s4d.h,
// nn/ssm/s4.h and nn/ssm/dlr.h are compositions around them. Shape letters: B batch, H channels, N state
// (N2 = N/2 conjugate pairs), L length, Cc kernel channels (1, or 2 for a bidirectional kernel).
//
// Why fused: the kernel K[h, l] = 2 Re sum_n Ct[h, n] exp(E[h, n] l) is a sum over (H, N, L) complex terms.
// Composed from real primitives (nn/ssm/s4d_minimal.cpp does exactly that, as the teaching twin) it
// materialises (H, N2, L) tensors four times over; fused, it walks L one step at a time, keeps O(H N) memory,
// and is computed in float64 whatever the parameters' dtype. Each fused op has a test that it equals its
// composed or naive twin (tests/nn/ssm).
//
// Complex numbers live in real tensors with a trailing dim of size 2 (re, im), as torch.view_as_real does,
// so optimisers (Adam's moments) treat the two parts as independent reals, as the official code does.
// Gradients of real losses w.r.t. a complex z are reported as g_z = dL/dRe z + i dL/dIm z (PyTorch's
// convention); for holomorphic w = f(z) the chain rule is g_z = g_w * conj(f'(z)).
//
// ---- ssm_conv: y = causal (or two-sided) convolution of u with K, plus the D skip ----
//   y[b, t, h] = sum_{s<=t} K0[h, t-s] u[b, s, h]  (+ sum_{s>t} K1[h, s-t-1] u[b, s, h] if bidirectional)
//                + D[h] u[b, t, h]
//   computed by FFT of length 2L (zero padding, so the circular convolution has no wrap-around).
//   Backward (circular correlations, same FFT length):
//     du[s] = sum_t dy[t] Kfull[t-s] + D dy[s]       dKfull[j] = sum_b sum_t dy[t] u[t-j]
//     dD[h] = sum_{b,t} dy[b, t, h] u[b, t, h]
//   Kfull (length 2L) holds K0 in [0, L) and K1 reversed in [L, 2L), as state-spaces/s4's bidirectional option.
//   Two implementations of the same map, tested to agree (tests/nn/fused/test_ssm_fast_conv.cpp):
//     ssm_conv_plain  the reference: float64, one 1-D FFT per (b, h) row read with stride H from (B, L, H).
//     ssm_conv_fast   float32 (as PyTorch runs it): blocks of 16 channels gathered into contiguous rows and
//                     transformed by batched fftwf plans; the kernel's spectrum once per h (not per (b, h));
//                     the spectra U saved by the forward; dK's spectrum sum_b conj(U) DY accumulated per thread,
//                     one inverse FFT per h; dD = dKfull[h, 0] (D u is the kernel's lag-0 tap).
//   ssm_conv picks fast for float32 u and plain otherwise (float64 callers asked for float64 accuracy).
//   On a device ssm_conv is composed of causal_conv (the backend's fft_conv), flip and pad (ssm_ops.cpp); the S4D and
//   DLR kernels set up their (H, N) modes on the host (from copies of the parameters) and run the Vandermonde product,
//   O(Cc H N L), on the device (tensor/vandermonde.h), whose gradients come back to the host for the chain rule.
//
// ---- diag_ssm_kernel (S4D, Gu et al. 2022 "On the Parameterization and Initialization of Diagonal SSMs") ----
//   A = -exp(a_re) + i A_imag, dt = exp(log_dt), dtA = dt A
//   ZOH:      Abar = exp(dtA),                       Bbar = (exp(dtA) - 1)/A * B
//   bilinear: Abar = (1 + dtA/2)/(1 - dtA/2),        Bbar = dt/(1 - dtA/2) * B
//   K[c, h, l] = 2 Re sum_n C[c, h, n] Bbar[h, n] Abar[h, n]^l      (the 2 Re: conjugate pairs)
//   written as 2 Re sum_n Ct exp(E l) with E = log Abar, Ct = C Bbar, and differentiated through that.
//
// ---- dlr_kernel (Gupta et al. 2022, "Simplifying and Understanding SSMs with Diagonal Linear RNNs") ----
//   Lambda = -x^2 + i y (so |lambda| = exp(-x^2) < 1), K[c, h, l] = Re sum_n W[c, h, n] exp(Lambda_n l).
#pragma once
#include <complex>
#include <vector>

#include "autograd/ops.h"
#include "tensor/vandermonde.h"

namespace dl::nn {

using dl::cplx;
using dl::from_cplx;
using dl::to_cplx;
using dl::to_doubles;

// ---- the convolution ----
// u (B, L, H); k (Cc, H, L) with Cc = 1 (causal) or 2 (bidirectional); D (H) or an undefined Var.
Var ssm_conv(const Var& u, const Var& k, const Var& D);
Var ssm_conv_plain(const Var& u, const Var& k, const Var& D);  // float64 inside, the reference (the fast twin:
                                                               // nn/fused/ssm_conv_fast.h)
// The shape checks both convolutions run (u (B, L, H), k (1|2, H, L), D (H) or undefined); the error names them.
void check_conv_args(const Tensor& u, const Tensor& k, const Tensor& D);
// The slow, obvious twin: a double loop over t and s, float64. Same arguments and result as ssm_conv.
Tensor ssm_conv_direct(const Tensor& u, const Tensor& k, const Tensor& D);

// ---- the Vandermonde core: K[c, h, l] = scale * Re sum_n Ct[c, h, n] exp(E[h, n] l) ----
// tensor/vandermonde.h: vandermonde_forward / _backward / _powers (the CPU's), and vandermonde() / vandermonde_backward()
// on tensors of either device.

enum class Discretization { zoh, bilinear };
Discretization parse_discretization(const std::string& s, const std::string& layer);

struct DiagKernelOptions {
  Discretization disc = Discretization::zoh;
  int64_t chunk = 256;
};
// log_dt (H); a_re (H, N2) with A_re = -exp(a_re); A_imag (H, N2); B (H, N2, 2) or undefined (= ones);
// C (Cc, H, N2, 2). Returns K (Cc, H, L) in the dtype of C.
Var diag_ssm_kernel(const Var& log_dt, const Var& a_re, const Var& A_imag, const Var& B, const Var& C, int64_t L,
                    const DiagKernelOptions& opt = {});

// x (N), y (N), W (Cc, H, N, 2). Returns K (Cc, H, L).
Var dlr_kernel(const Var& x, const Var& y, const Var& W, int64_t L, int64_t chunk = 256);

// Complex parameters stored as (..., 2) reals: to_cplx / from_cplx (tensor/vandermonde.h).

}  // namespace dl::nn
