// cuda/ops/optim.cuh - the optimizer step and the gradient norm on the device, as Thrust functors, so a
// training step never copies parameters to the host.
//
//   adam_step  one fused pass over a parameter buffer, the loop of optim/adam.cpp element by element:
//                g = g + wd p (Adam's L2) | p = p (1 - lr wd) (AdamW's decoupled decay)
//                m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//                p -= step_size m / (sqrt(v) / bc2_sqrt + eps)
//              with the scalars (step_size = lr / (1 - b1^t), bc2_sqrt = sqrt(1 - b2^t)) computed on the host
//              in double, as optim/adam.cpp does, and rounded to T the same way.
//   sum_sq     sum of g^2 over a buffer in float64 (thrust::transform_reduce), the term of the global 2-norm
//              sqrt(sum over parameters of sum g^2) that clipping (optim/clip.h) scales by max_norm / norm.
// What it is not: a multi-tensor kernel (one launch per parameter, as the CPU loops per parameter).
#pragma once
#include <thrust/functional.h>
#include <thrust/transform_reduce.h>

#include "cuda/ops/common.cuh"
#include "tensor/backend.h"

namespace dl::ops {

template <class T> struct AdamStepF {
  T *p, *m, *v;
  const T* g;
  T b1, b2, c1, c2, eps, wd, step, bc2, shrink;
  bool l2, decay;
  DL_HD void operator()(int64_t i) const {
    T gi = g[i];
    if (l2) gi += wd * p[i];
    if (decay) p[i] *= shrink;
    m[i] = b1 * m[i] + c1 * gi;
    v[i] = b2 * v[i] + c2 * gi * gi;
    T denom = m_sqrt(v[i]) / bc2 + eps;
    p[i] -= step * (m[i] / denom);
  }
};

// param, grad, m (exp_avg), v (exp_avg_sq): contiguous, one shape and dtype; updated in place.
template <class Exec>
void adam_step(const Exec& exec, const AdamScalars& s, const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v) {
  dispatch_float(param.dtype(), "adam_step (cuda)", [&]<class T>() {
    for_n(exec, param.numel(),
          AdamStepF<T>{dptr<T>(param), dptr<T>(m), dptr<T>(v), dptr<T>(grad), (T)s.beta1, (T)s.beta2, (T)(1 - s.beta1),
                       (T)(1 - s.beta2), (T)s.eps, (T)s.weight_decay, (T)s.step_size, (T)s.bc2_sqrt, (T)s.shrink,
                       !s.decoupled && s.weight_decay != 0, s.decoupled && s.weight_decay != 0});
  });
}

template <class T> struct SquareF {
  const T* g;
  DL_HD double operator()(int64_t i) const { return (double)g[i] * (double)g[i]; }
};

// sum of g^2 over a contiguous buffer, in float64.
template <class Exec> double sum_sq(const Exec& exec, const Tensor& g) {
  return dispatch_float(g.dtype(), "sum_sq (cuda)", [&]<class T>() {
    return thrust::transform_reduce(exec, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(g.numel()),
                                    SquareF<T>{dptr<T>(g)}, 0.0, thrust::plus<double>());
  });
}

}  // namespace dl::ops
