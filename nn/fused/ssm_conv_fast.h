// nn/fused/ssm_conv_fast.h - the float32 FFT convolution of the state-space layers on batched FFTs of rows.
//
// The same map as nn/ssm/ssm_ops.h's ssm_conv_plain (float64, one 1-D FFT per (b, h) row), which is its reference
// twin: y = K * u + D u with K (Cc, H, L), Cc = 1 causal or 2 bidirectional. What makes it fast: blocks of 16
// channels gathered from (B, L, H) into contiguous rows, one batched plan per block, the kernel's spectrum once
// per h (not per (b, h)), the input spectra saved for the backward, dK's spectrum accumulated per thread.
// The rows are transformed by nn/fused/real_fft.h (a real FFT on a complex one of half the length).
// ssm_conv (nn/ssm/ssm_ops.h) dispatches here for float32 inputs. Agreement: tests/nn/fused/test_ssm_fast_conv.cpp.
#pragma once
#include "autograd/ops.h"

namespace dl::nn {

// u (B, L, H) f32; k (Cc, H, L); D (H) or an undefined Var -> y (B, L, H).
Var ssm_conv_fast(const Var& u, const Var& k, const Var& D);

}  // namespace dl::nn
