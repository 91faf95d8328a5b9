// tensor/nn_kernels.h - fused neural-network kernels on Tensors (no autograd): softmax/log_softmax,
// layer_norm/rms_norm, batch-norm statistics, dropout masks and the losses, each with its backward kernel.
// autograd/nn_ops.h wraps them with gradients and states the formulas; the math is repeated at each
// kernel in nn_kernels.cpp / nn_kernels_loss.cpp.
//
// Shapes: C is the normalised / class dim (always the LAST dim for layer_norm, rms_norm and the losses,
// any dim for softmax); R = numel / C rows. Inputs may be any view (they are made contiguous first);
// results are fresh contiguous tensors. Float dtypes; targets are i64. CPU only, except softmax over the
// last dim of an f32 tensor, which goes to the device backend.
//
// Determinism: every sum across rows (dweight, dbias, a mean loss, batch statistics) is formed from
// fixed-size chunks added in chunk order, and dropout masks come from per-chunk random streams, so results
// are bitwise the same for any number of threads.
//
// What it is not: a home for composite layers (attention, MLP): those are compositions in nn/.
#pragma once
#include <functional>

#include "tensor/tensor.h"

namespace dl {

// ---- softmax over any dim ----
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
Tensor softmax_backward(const Tensor& y, const Tensor& dy, int64_t dim);      // dx = y (dy - sum(dy y))
Tensor log_softmax_backward(const Tensor& y, const Tensor& dy, int64_t dim);  // dx = dy - exp(y) sum(dy)

// ---- normalisation over the last dim (C) ----
// weight/bias: shape [C] or undefined (Tensor()) for none. mean/rstd have shape x.shape[:-1].
struct NormOut {
  Tensor y, mean, rstd;  // mean is undefined for rms_norm
};
struct NormGrads {
  Tensor dx, dweight, dbias;  // undefined where not asked for
};
NormOut layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);
NormGrads layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                              const Tensor& weight, bool need_dx, bool need_dweight, bool need_dbias);
NormOut rms_norm(const Tensor& x, const Tensor& weight, double eps);
NormGrads rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& rstd, const Tensor& weight,
                            bool need_dx, bool need_dweight);

// ---- batch norm in training mode: statistics over every dim but C ----
// x: (N, C) or (B, C, L). mean/var: [C] (var biased, as used to normalise); var_unbiased = var * n/(n-1)
// is what PyTorch feeds its running_var.
struct BatchNormOut {
  Tensor y, mean, var, var_unbiased, rstd;
};
BatchNormOut batch_norm_train(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);
NormGrads batch_norm_train_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                    const Tensor& weight, bool need_dx, bool need_dweight, bool need_dbias);

// ---- dropout ----
// A mask of 0 and 1/(1-p), each element kept with probability 1-p (p == 1: all zeros).
// Draws exactly one u64 from g (the base seed); element i belongs to chunk i / 4096, whose stream is a
// fresh xoshiro256** seeded with base + chunk. Chunks are independent, so threads can fill them in any
// order and the mask is the same for any thread count. Each u64 decides two elements (32 bits each).
Tensor dropout_mask(const Shape& shape, double p, Generator& g, DType dtype = DType::f32);

// ---- losses ----
enum class Reduction { none, mean, sum };
const char* reduction_name(Reduction r);

// Cross-entropy fused with log_softmax. logits (..., C), target (...) i64 with values in [0, C) or
// ignore_index. With label smoothing s the target distribution is q = (1 - s) onehot(t) + s / C:
//   loss_row = lse - (1 - s) x_t - s mean_j(x_j),  lse = log sum_j exp(x_j)
// mean: sum over non-ignored rows / their count (NaN when every row is ignored, like PyTorch);
// none: one loss per row (0 for ignored rows), shape target.shape.
struct CrossEntropyOut {
  Tensor loss, lse;   // lse: one per row, saved for backward
  int64_t count = 0;  // non-ignored rows
};
CrossEntropyOut cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index, double label_smoothing,
                              Reduction reduction);
Tensor cross_entropy_backward(const Tensor& dy, const Tensor& logits, const Tensor& target, const Tensor& lse,
                              int64_t ignore_index, double label_smoothing, Reduction reduction, int64_t count);
// Negative log-likelihood of log-probabilities logp (..., C): loss_row = -logp[t].
CrossEntropyOut nll_loss(const Tensor& logp, const Tensor& target, int64_t ignore_index, Reduction reduction);
Tensor nll_loss_backward(const Tensor& dy, const Shape& logp_shape, DType dtype, const Tensor& target,
                         int64_t ignore_index, Reduction reduction, int64_t count);

// Pointwise losses l(p, t) with an optional mask m (undefined = all ones; any dtype, broadcast to p's
// shape; 0/1 selects positions, other values weight them). mean = sum(m l) / sum(m).
enum class PointwiseLoss { mse, l1, bce_logits };
//   mse         l = (p - t)^2                                 dl/dp = 2 (p - t)        dl/dt = -dl/dp
//   l1          l = |p - t|                                   dl/dp = sign(p - t)      dl/dt = -dl/dp
//   bce_logits  l = max(p, 0) - p t + log(1 + exp(-|p|))      dl/dp = sigmoid(p) - t   dl/dt = -p
struct PointwiseLossOut {
  Tensor loss;
  double count = 0;  // sum(m), the divisor of the mean
};
PointwiseLossOut pointwise_loss(PointwiseLoss kind, const Tensor& pred, const Tensor& target, const Tensor& mask,
                                Reduction reduction);
struct PairGrads {
  Tensor dpred, dtarget;
};
PairGrads pointwise_loss_backward(PointwiseLoss kind, const Tensor& dy, const Tensor& pred, const Tensor& target,
                                  const Tensor& mask, Reduction reduction, double count, bool need_dpred,
                                  bool need_dtarget);

// ---- helper shared by the kernels ----
// sum over [0, n) of partial(i0, i1), cut into fixed chunks of `chunk` and added in order (deterministic).
double ordered_sum(int64_t n, int64_t chunk, const std::function<double(int64_t, int64_t)>& partial);

}  // namespace dl
