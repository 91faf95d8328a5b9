// autograd/conv.h - differentiable conv1d (kernels, shapes and algorithms: tensor/conv.h).
//
// Gradient formulas, with the forward written as y_g = W_g @ cols_g (cols = im2col(xpad), per group g):
//   dW_g = dy_g @ cols_g^T      dx = col2im(W_g^T @ dy_g)  (padding positions dropped)      db = sum_{b,t} dy
// e.g. causal dilated depthwise:  conv1d(x, w, b, {.pad_left = (K - 1) * d, .dilation = d, .groups = C})
#pragma once
#include "autograd/variable.h"
#include "tensor/conv.h"

namespace dl {

Var conv1d(const Var& x, const Var& w, const Var& bias = Var(), const Conv1dParams& p = {});

}  // namespace dl
