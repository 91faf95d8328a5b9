// tensor/conv.h - 1-D convolution (cross-correlation, as torch.nn.functional.conv1d), no autograd.
//
// Shape letters: B batch, Cin/Cout channels, L input length, K kernel taps, G groups, Lout output length.
//   x (B, Cin, L), w (Cout, Cin/G, K), bias (Cout) or undefined;
//   y[b, o, t] = bias[o] + sum_{c in group(o)} sum_k w[o, c, k] * xpad[b, c, t*stride + k*dilation]
//   xpad = x with pad_left zeros before and pad_right after (causal: pad_left = (K-1)*dilation, pad_right = 0)
//   Lout = (L + pad_left + pad_right - dilation*(K-1) - 1) / stride + 1
// Algorithms:
//   Cin/G > 1  im2col + sgemm: cols (Cin*K, B*Lout) with cols[c*K+k, b*Lout+t] = xpad[b, c, t*s + k*d], then per
//              group y_g = W_g (Cout/G, Cin/G*K) @ cols_g -- one sgemm per group for the whole batch (batches
//              are processed in chunks so cols stays under ~64 MB).
//   Cin/G = 1  (depthwise, incl. channel multipliers) a direct loop over (b, o), vectorised over t.
// Backward (the forward is y = W cols, so):  dW_g = dy_g cols_g^T,  dcols_g = W_g^T dy_g, dx = col2im(dcols)
// (the adjoint of im2col: each cols entry adds back into the xpad element it was copied from; positions in
// the padding are dropped), db = sum over b, t of dy. col2im and the depthwise loops split work over
// (b, input channel) and dW over output channels, so no two threads write one element.
#pragma once
#include "tensor/tensor.h"

namespace dl {

struct Conv1dParams {
  int64_t stride = 1, pad_left = 0, pad_right = 0, dilation = 1, groups = 1;
};

int64_t conv1d_out_length(int64_t L, int64_t K, const Conv1dParams& p);
Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv1dParams& p = {});

struct Conv1dGrads {
  Tensor dx, dw, db;
};
Conv1dGrads conv1d_backward(const Tensor& x, const Tensor& w, const Tensor& dy, const Conv1dParams& p, bool need_x, bool need_w,
                            bool need_b);

}  // namespace dl
