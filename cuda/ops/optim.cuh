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
//   adam_steps / sum_sq_all   the same over many buffers in ONE launch (the multi-tensor form): a table of the
//              buffers' pointers and first flat indices lives on the device; thread i finds its buffer by a binary
//              search over the starts and updates (or squares) element i - start of it. One launch per step instead of
//              one per parameter, and one read back for the global norm instead of one per parameter.
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

// The step's scalars rounded to T, over the buffers p, m, v, g.
template <class T> AdamStepF<T> adam_functor(const AdamScalars& s, T* p, T* m, T* v, const T* g) {
  return AdamStepF<T>{p, m, v, g, (T)s.beta1, (T)s.beta2, (T)(1 - s.beta1), (T)(1 - s.beta2), (T)s.eps, (T)s.weight_decay,
                      (T)s.step_size, (T)s.bc2_sqrt, (T)s.shrink, !s.decoupled && s.weight_decay != 0,
                      s.decoupled && s.weight_decay != 0};
}

// param, grad, m (exp_avg), v (exp_avg_sq): contiguous, one shape and dtype; updated in place.
template <class Exec>
void adam_step(const Exec& exec, const AdamScalars& s, const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v) {
  dispatch_float(param.dtype(), "adam_step (cuda)", [&]<class T>() {
    for_n(exec, param.numel(), adam_functor<T>(s, dptr<T>(param), dptr<T>(m), dptr<T>(v), dptr<T>(grad)));
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

// ---- many buffers at once ----
// A table of k buffers on the device: slot j holds their pointers (as integers) and start j; starts[k] = the total.
// Element i belongs to slot j with starts[j] <= i < starts[j + 1] (buffers of 0 elements are left out by the caller).
struct SlotTable {
  const int64_t* slots;  // (k, width): pointers as integers
  const int64_t* starts; // (k + 1)
  int64_t k, width;
  DL_HD int64_t find(int64_t i) const {  // the slot of element i
    int64_t lo = 0, hi = k - 1;
    while (lo < hi) {
      const int64_t mid = (lo + hi + 1) / 2;
      if (starts[mid] <= i) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
  template <class T> DL_HD T* ptr(int64_t j, int64_t f) const { return (T*)(uintptr_t)slots[j * width + f]; }
};

template <class T> struct AdamStepsF {
  SlotTable tab;  // width 4: param, grad, m, v
  AdamStepF<T> one;
  DL_HD void operator()(int64_t i) const {
    const int64_t j = tab.find(i);
    AdamStepF<T> f = one;
    f.p = tab.ptr<T>(j, 0), f.g = tab.ptr<T>(j, 1), f.m = tab.ptr<T>(j, 2), f.v = tab.ptr<T>(j, 3);
    f(i - tab.starts[j]);
  }
};

template <class T> struct SquaresF {
  SlotTable tab;  // width 1: g
  DL_HD double operator()(int64_t i) const {
    const int64_t j = tab.find(i);
    const double x = (double)tab.ptr<T>(j, 0)[i - tab.starts[j]];
    return x * x;
  }
};

// tab: the table's two arrays as platform pointers (built and copied by the caller, cuda/backend_reduce.cuh).
template <class Exec>
void adam_steps(const Exec& exec, const AdamScalars& s, DType t, const SlotTable& tab, int64_t total) {
  dispatch_float(t, "adam_steps (cuda)", [&]<class T>() {
    for_n(exec, total, AdamStepsF<T>{tab, adam_functor<T>(s, nullptr, nullptr, nullptr, nullptr)});
  });
}

template <class Exec> double sum_sq_all(const Exec& exec, DType t, const SlotTable& tab, int64_t total) {
  if (total == 0) return 0.0;
  return dispatch_float(t, "sum_sq_all (cuda)", [&]<class T>() {
    return thrust::transform_reduce(exec, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(total),
                                    SquaresF<T>{tab}, 0.0, thrust::plus<double>());
  });
}

}  // namespace dl::ops
