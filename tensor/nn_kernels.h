// tensor/nn_kernels.h - fused neural-network kernels on Tensors (no autograd): softmax/log_softmax,
// layer_norm/rms_norm, batch-norm statistics, dropout masks and the losses, each with its backward kernel.
// autograd/nn_ops.h wraps them with gradients and states the formulas; the math is repeated at each
// kernel in nn_kernels.cpp / nn_kernels_loss.cpp / nn_kernels_dropout.cpp.
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
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <bit>
#include <functional>

#include "tensor/counter_hash.h"
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
NormGrads layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight,
                              bool need_dx, bool need_dweight, bool need_dbias);
NormOut rms_norm(const Tensor& x, const Tensor& weight, double eps);
NormGrads rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& rstd, const Tensor& weight, bool need_dx,
                            bool need_dweight);

// ---- batch norm in training mode: statistics over every dim but C ----
// x: (N, C) or (B, C, L). mean/var: [C] (var biased, as used to normalise); var_unbiased = var * n/(n-1)
// is what PyTorch feeds its running_var.
struct BatchNormOut {
  Tensor y, mean, var, var_unbiased, rstd;
};
BatchNormOut batch_norm_train(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);
NormGrads batch_norm_train_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                    const Tensor& weight, bool need_dx, bool need_dweight, bool need_dbias);

// The kernels' common entry check (here and in nn_kernels_*.cpp): x defined, on the CPU and of a float dtype, else an
// error that names op and what was found.
void require_cpu_float(const Tensor& x, const char* op);

// ---- dropout (nn_kernels_dropout.cpp) ----
// A mask of 0 and 1/(1-p), each element kept with probability 1-p (p == 1: all zeros).
// Draws exactly one u64 from g (the base seed); element i is row i / 4096, column i % 4096 of the counter-based
// draws below (kept when row_draw >= p 2^32), so the mask is the same for any thread count and order.
// On a device (device != cpu) the backend draws the same mask there from the same one u64 (cuda/ops/index.cuh).
Tensor dropout_mask(const Shape& shape, double p, Generator& g, DType dtype = DType::f32, Device device = Device::cpu);
// The same mask for n elements as bits (bit i % 64 of word i / 64 set = element i kept), from the same draw of g:
// what the dropout node keeps for its backward, 1/32 of a float mask's memory.
std::vector<uint64_t> dropout_keep_bits(int64_t n, double p, Generator& g);
// x * mask for the mask the bits describe (kept: x / (1 - p), dropped: 0); x is a contiguous CPU f32/f64 tensor.
Tensor apply_dropout_bits(const Tensor& x, const std::vector<uint64_t>& bits, double p);
// The two above in one pass over x (the fast path the dropout op runs on the CPU): the same draw of g, the same
// bits and the same y, bit for bit (tests/autograd/test_nn_ops.cpp, Dropout.OnePassIsDrawThenApply). One pass
// instead of a pass for the bits and one for y: a (32, 1024, 128) f32 tensor in 0.8 ms instead of 1.6 on 2 cores.
struct DropoutOut {
  Tensor y;
  std::vector<uint64_t> bits;
};
DropoutOut dropout_one_pass(const Tensor& x, double p, Generator& g);
// y[i] = x[i] * mask(e0 + i) for i < n (y may be x), for the mask the bits describe (element e0 + i of the tensor they
// were drawn for): apply_dropout_bits on a block of a tensor that a fused op holds only a few rows of at a time.
void apply_dropout_bits_block(const float* x, float* y, const uint64_t* bits, int64_t e0, int64_t n, double p);

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
Tensor nll_loss_backward(const Tensor& dy, const Shape& logp_shape, DType dtype, const Tensor& target, int64_t ignore_index,
                         Reduction reduction, int64_t count);

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
                                  const Tensor& mask, Reduction reduction, double count, bool need_dpred, bool need_dtarget);

// ---- counter-based random draws (dropout masks here and in nn/qkv_attention): tensor/counter_hash.h ----

// ---- helpers shared by the kernels ----
// exp for float32 without a libm call, so loops over it vectorise (#pragma omp simd): exp(x) = 2^n exp(r),
// n = round(x / ln 2) (by adding and subtracting 1.5 * 2^23: floorf does not vectorise under the default
// -ftrapping-math), r = x - n ln 2 in [-ln2/2, ln2/2] (ln 2 split in two so r is exact), exp(r) by the
// Cephes expf polynomial. Relative error < 2e-7 (~2 ulp) on [-87.3, 88.3]; 0 below -87.3 (where expf is
// denormal or 0); clamped to exp(88.3) above (our uses only exponentiate x - max <= 0). NaN stays NaN.
// The float64 kernels use std::exp.
inline float exp_fast(float x) {
  float xc = x < -87.3f ? -87.3f : x;
  xc = xc > 88.3f ? 88.3f : xc;
  float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = xc - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float e = p * r * r + r + 1.0f;
  int32_t bits = ((int32_t)n + 127) << 23;  // 2^n as a float: n is in [-126, 127]
  float y = e * std::bit_cast<float>(bits);
  return x < -87.3f ? 0.0f : y;  // exact zeros for masked (-inf) scores
}
// exp_fast in float32 (so the loops vectorise), std::exp in float64 (the plain twin); and the sigmoid on it,
// 1 / (1 + exp(-x)): the elementwise sigmoid, SiLU and GLU's gate (nn/fused/glu.cpp) all use this one.
template <class T> inline T exp_t(T x) {
  if constexpr (std::is_same_v<T, float>) return exp_fast(x);
  else return std::exp(x);
}
template <class T> inline T sigmoid_t(T x) { return (T)1 / ((T)1 + exp_t(-x)); }

// erf for float32 without a libm call, so GELU loops vectorise: Abramowitz & Stegun 7.1.26,
//   erf(|x|) = 1 - (a1 t + a2 t^2 + a3 t^3 + a4 t^4 + a5 t^5) exp(-x^2),  t = 1 / (1 + 0.3275911 |x|),
// absolute error < 1.5e-7 (plus exp_fast's 2e-7 relative), odd in x. The float64 kernels use std::erf;
// tests/nn/fused/ checks the two agree.
// The second form also hands back g = exp(-x^2), the Gaussian factor it computes on the way: GELU's derivative needs
// the normal density at v = sqrt(2) x, which is g / sqrt(2 pi), so it takes one exponential instead of two.
inline float erf_fast(float x, float& g) {
  float ax = x < 0 ? -x : x;
  float t = 1.0f / (1.0f + 0.3275911f * ax);
  float y = ((((1.061405429f * t - 1.453152027f) * t + 1.421413741f) * t - 0.284496736f) * t + 0.254829592f) * t;
  g = exp_fast(-ax * ax);
  float r = 1.0f - y * g;
  return x < 0 ? -r : r;
}
inline float erf_fast(float x) {
  float g;
  return erf_fast(x, g);
}

// GELU (the erf form) v Phi(v) and its derivative Phi(v) + v phi(v) from one erf, with the density
// phi(v) = exp(-v^2 / 2) / sqrt(2 pi) taken from the exponential inside erf_fast (float32: one exponential a value;
// float64, the plain twin: std::erf and std::exp). One definition for the elementwise GELU and its backward
// (tensor/elementwise.cpp) and the fused feed-forward, whose forward keeps the derivative (autograd/feed_forward.cpp),
// so all of them give the same bits.
template <class T> inline T gelu_erf_with_grad(T v, T& grad) {
  const T x = v * (T)M_SQRT1_2;
  T g;  // exp(-x^2) = exp(-v^2 / 2)
  T erf;
  if constexpr (std::is_same_v<T, float>) erf = erf_fast(x, g);
  else erf = std::erf(x), g = std::exp(-x * x);
  grad = (T)0.5 * ((T)1 + erf) + v * g * (T)0.3989422804014327;
  return (T)0.5 * v * ((T)1 + erf);
}
template <class T> inline T gelu_erf_t(T v) {
  T grad;  // unused: in float32 the compiler drops its arithmetic
  return gelu_erf_with_grad(v, grad);
}
template <class T> inline T gelu_erf_grad_t(T v) {
  T grad;
  gelu_erf_with_grad(v, grad);
  return grad;
}

// sum over c < n of f(c) in kLanes independent partials, so the loop vectorises without reassociation
// flags (f must be cheap: loads and arithmetic).
template <class T, class F> inline T lane_sum(int64_t n, F&& f) {
  constexpr int kLanes = 16;
  T acc[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes) {
#pragma omp simd
    for (int j = 0; j < kLanes; j++) acc[j] += f(c + j);
  }
  T s = 0;
  for (; c < n; c++) s += f(c);
  for (int j = 0; j < kLanes; j++) s += acc[j];
  return s;
}

// sum over [0, n) of partial(i0, i1), cut into fixed chunks of `chunk` and added in order (deterministic).
double ordered_sum(int64_t n, int64_t chunk, const std::function<double(int64_t, int64_t)>& partial);

}  // namespace dl
