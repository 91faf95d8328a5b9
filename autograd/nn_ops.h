// autograd/nn_ops.h - differentiable fused NN primitives: softmax, log_softmax, layer_norm, rms_norm,
// batch_norm_train, dropout and the losses (kernels in tensor/nn_kernels.h). The fused ones (softmax,
// log_softmax, the three norms, cross_entropy) are checked against their composition from primitives in
// tests/autograd/test_nn_ops.cpp (NnOpsAgree).
//
// Gradient formulas (C = normalised/class dim, sums and means over it unless said otherwise):
//   softmax       y = exp(x - lse)                    dx = y (dy - sum(dy y))
//   log_softmax   y = x - lse                         dx = dy - exp(y) sum(dy)
//   layer_norm    xhat = (x - mu) rstd, rstd = 1/sqrt(var + eps) (biased var), y = xhat w + b
//                 dxhat = dy w
//                 dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat))
//                 dw = sum over rows of dy xhat,  db = sum over rows of dy
//                 (derivation: d xhat_i / d x_j = rstd (delta_ij - 1/C - xhat_i xhat_j / C))
//   rms_norm      xhat = x rstd, rstd = 1/sqrt(mean(x^2) + eps), y = xhat w
//                 dx = rstd (dxhat - xhat mean(dxhat xhat)),  dw = sum over rows of dy xhat
//   batch_norm_train  layer_norm's formulas with statistics per channel over (N, L) instead of per row
//   dropout       y = x m, m = 0 or 1/(1-p) (saved)   dx = dy m
//   cross_entropy loss_r = lse_r - (1-s) x[r,t] - s mean_j x[r,j]   (s = label smoothing)
//                 dx[r] = g_r (softmax(x[r]) - q_r), q_r = (1-s) onehot(t_r) + s/C; g_r = dy/count for
//                 mean (count = non-ignored rows), dy for sum, dy[r] for none; ignored rows get 0
//   nll_loss      loss_r = -logp[r, t]                dlogp[r, t] = -g_r
//   mse / l1 / bce_with_logits: l(p, t) elementwise, times mask m;  dp = g m dl/dp,  dt = g m dl/dt
//                 (the table is in tensor/nn_kernels.h); mean divides by sum(m) (numel without a mask)
// Targets given as Tensor (class indices, masks) get no gradient.
#pragma once
#include "autograd/variable.h"
#include "tensor/nn_kernels.h"

namespace dl {

Var softmax(const Var& x, int64_t dim);
Var log_softmax(const Var& x, int64_t dim);

// weight / bias: [C] or an undefined Var() for none.
Var layer_norm(const Var& x, const Var& weight, const Var& bias, double eps = 1e-5);
Var rms_norm(const Var& x, const Var& weight, double eps = 1e-6);

// Training-mode batch norm over x (N, C) or (B, C, L); y is differentiable, the statistics are plain
// tensors for the layer to fold into its running averages.
struct BatchNormResult {
  Var y;
  Tensor mean, var, var_unbiased;
};
BatchNormResult batch_norm_train(const Var& x, const Var& weight, const Var& bias, double eps = 1e-5);

// Identity (the same Var) when !training or p == 0. The mask recipe is in tensor/nn_kernels.h (dropout_mask):
// for a given Generator state the mask is the same on any number of threads.
Var dropout(const Var& x, double p, bool training, Generator& g = default_generator());

Var cross_entropy(const Var& logits, const Tensor& target, int64_t ignore_index = -100, double label_smoothing = 0.0,
                  Reduction reduction = Reduction::mean);
Var nll_loss(const Var& logp, const Tensor& target, int64_t ignore_index = -100, Reduction reduction = Reduction::mean);
Var mse_loss(const Var& pred, const Var& target, Reduction reduction = Reduction::mean, const Tensor& mask = Tensor());
Var l1_loss(const Var& pred, const Var& target, Reduction reduction = Reduction::mean, const Tensor& mask = Tensor());
Var binary_cross_entropy_with_logits(const Var& logits, const Var& target, Reduction reduction = Reduction::mean,
                                     const Tensor& mask = Tensor());

}  // namespace dl
