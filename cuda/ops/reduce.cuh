// cuda/ops/reduce.cuh - device reductions over any set of dims: sum, mean, var, max/min (values and the
// index of the first extreme), logsumexp; and cumsum (a running sum along one dim). sum_to (the broadcast
// backward) is a sum over dims, so it needs nothing of its own (tensor/elementwise.cpp picks the dims).
//
// The caller hands x as a view whose first `nkept` dims are kept and whose other dims are reduced
// (tensor/reduce.cpp permutes the dims; no copy). Output o (row-major over the kept dims) reduces
//   x[kept(o), red(r)] for r = 0 .. R-1, R = the product of the reduced sizes,
// on one thread, in r order, accumulating in float64 as the CPU does (tensor/reduce.h): the result does
// not depend on the launch shape, and float32 sums keep their small terms.
//   sum        s = sum_r x
//   mean       s / R (R = 0 gives NaN, as on the CPU)
//   max/min    the first extreme value and its r; a NaN wins (PyTorch's rule)
//   logsumexp  c + log(sum_r exp(x - c)), c = max, or 0 when the max is +-inf (an all -inf slice: -inf)
//   var        two passes as tensor/reduce.cpp: mu = sum_r x / R, then sum_r (x - mu)^2 / (R - 1 if unbiased else R),
//              both in float64 (no cancellation of E[x^2] - E[x]^2)
// Sums and means of few outputs over long rows (a bias gradient, a whole-tensor sum) are two-level instead: S
// interleaved partial sums per output in f64 (common.cuh's sum_slices), then one thread per output adds them in
// order; the order is fixed by the shape, so the result does not depend on the launch either.
// What it is not: tuned (no shared memory; max/min, var and logsumexp still walk a row on one thread).
#pragma once
#include "cuda/ops/common.cuh"
#include "tensor/backend.h"

namespace dl::ops {

template <class T, bool IsMax> struct Extreme {
  T value;
  int64_t index;
};

// The first extreme of p[red(r)], r in [0, R) (R >= 1); NaN beats every number.
template <bool IsMax, class T> DL_HD inline Extreme<T, IsMax> first_extreme(const T* p, const Strided& red, int64_t R) {
  T best = p[red.offset(0)];
  int64_t bi = 0;
  if (!m_isnan(best))
    for (int64_t r = 1; r < R; r++) {
      T v = p[red.offset(r)];
      bool better = IsMax ? v > best : v < best;
      if (better || m_isnan(v)) {
        best = v, bi = r;
        if (m_isnan(v)) break;
      }
    }
  return {best, bi};
}

template <class T> struct ReduceF {
  ReduceOp op;
  const T* x;
  T* values;
  int64_t* indices;  // null when not asked for
  Strided kept, red;
  int64_t R;
  DL_HD void operator()(int64_t o) const {
    const T* p = x + kept.offset(o);
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::mean: {
        double s = 0;
        for (int64_t r = 0; r < R; r++) s += (double)p[red.offset(r)];
        values[o] = op == ReduceOp::mean ? (T)(s * (1.0 / (double)R)) : (T)s;
        return;
      }
      case ReduceOp::max:
      case ReduceOp::min: {
        T v;
        int64_t i;
        if (op == ReduceOp::max) {
          auto e = first_extreme<true>(p, red, R);
          v = e.value, i = e.index;
        } else {
          auto e = first_extreme<false>(p, red, R);
          v = e.value, i = e.index;
        }
        values[o] = v;
        if (indices) indices[o] = i;
        return;
      }
      case ReduceOp::var:
      case ReduceOp::var_unbiased: {
        double mu = 0, ss = 0;
        for (int64_t r = 0; r < R; r++) mu += (double)p[red.offset(r)];
        mu /= (double)R;
        for (int64_t r = 0; r < R; r++) {
          double d = (double)p[red.offset(r)] - mu;
          ss += d * d;
        }
        values[o] = (T)(ss * (1.0 / (double)(R - (op == ReduceOp::var_unbiased ? 1 : 0))));
        return;
      }
      case ReduceOp::logsumexp: {
        T m = first_extreme<true>(p, red, R).value;
        double c = (m == (T)INFINITY || m == -(T)INFINITY) ? 0.0 : (double)m, s = 0;
        for (int64_t r = 0; r < R; r++) s += exp((double)p[red.offset(r)] - c);
        values[o] = (T)(c + log(s));
        return;
      }
    }
  }
};

// The two levels of a long sum: partial[s * O + o] = sum over r = s, s + S, ... of x[kept(o), red(r)] ...
template <class T> struct PartialSumF {
  const T* x;
  double* partial;
  Strided kept, red;
  int64_t R, O, S;
  DL_HD void operator()(int64_t i) const {
    int64_t o = i % O, s = i / O;
    const T* p = x + kept.offset(o);
    double acc = 0;
    for (int64_t r = s; r < R; r += S) acc += (double)p[red.offset(r)];
    partial[i] = acc;
  }
};
// ... then values[o] = sum_s partial[s * O + o], in s order (divided by R for a mean).
template <class T> struct FinishSumF {
  const double* partial;
  T* values;
  int64_t R, O, S;
  bool mean;
  DL_HD void operator()(int64_t o) const {
    double acc = 0;
    for (int64_t s = 0; s < S; s++) acc += partial[s * O + o];
    values[o] = mean ? (T)(acc * (1.0 / (double)R)) : (T)acc;
  }
};

// values (and indices, when defined) are contiguous with one element per kept position.
template <class Exec>
void reduce(const Exec& exec, ReduceOp op, const Tensor& x, int64_t nkept, const Tensor& values, const Tensor& indices) {
  Strided kept = sub_layout(x, 0, nkept, "reduce"), red = sub_layout(x, nkept, x.dim(), "reduce");
  int64_t R = 1;
  for (int64_t d = nkept; d < x.dim(); d++) R *= x.size(d);
  if (R == 0 && values.numel() > 0 && op != ReduceOp::sum && op != ReduceOp::mean && op != ReduceOp::var &&
      op != ReduceOp::var_unbiased)
    fail("reduce (cuda): cannot reduce over an empty dim (size 0)");
  const int64_t O = values.numel(), S = (op == ReduceOp::sum || op == ReduceOp::mean) ? sum_slices(O, R) : 1;
  dispatch_float(x.dtype(), "reduce (cuda)", [&]<class T>() {
    if (S > 1) {  // scratch on x's device: the caching allocator on the GPU, host memory on the twin
      Tensor partial = Tensor::empty({S * O}, DType::f64, x.device());
      for_n(exec, S * O, PartialSumF<T>{dptr<T>(x), dptr<double>(partial), kept, red, R, O, S});
      for_n(exec, O, FinishSumF<T>{dptr<double>(partial), dptr<T>(values), R, O, S, op == ReduceOp::mean});
      return;
    }
    int64_t* pi = indices.defined() ? dptr<int64_t>(indices) : nullptr;
    for_n(exec, O, ReduceF<T>{op, dptr<T>(x), dptr<T>(values), pi, kept, red, R});
  });
}

// ---------------------------------------------------------------------------------------------
// cumsum along d of a contiguous (outer, n, inner) tensor: one thread per (o, i) walks j in order (from the end
// when reverse), adding in T as tensor/shape_ops.cpp does, so the result is the CPU's bit for bit. (A CUB scan
// would be the fast form for few long rows.)
template <class T> struct CumsumF {
  const T* x;
  T* y;
  int64_t n, inner;
  bool reverse;
  DL_HD void operator()(int64_t e) const {
    int64_t o = e / inner, i = e % inner;
    T acc = 0;
    for (int64_t jj = 0; jj < n; jj++) {
      int64_t k = (o * n + (reverse ? n - 1 - jj : jj)) * inner + i;
      acc = jj == 0 ? x[k] : acc + x[k];
      y[k] = acc;
    }
  }
};

template <class Exec> void cumsum(const Exec& exec, const Tensor& x, int64_t d, bool reverse, const Tensor& out) {
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < d; k++) outer *= x.size(k);
  for (int64_t k = d + 1; k < x.dim(); k++) inner *= x.size(k);
  dispatch_all(x.dtype(), "cumsum (cuda)", [&]<class T>() {
    for_n(exec, outer * inner, CumsumF<T>{dptr<T>(x), dptr<T>(out), x.dim() ? x.size(d) : 1, inner, reverse});
  });
}

}  // namespace dl::ops
