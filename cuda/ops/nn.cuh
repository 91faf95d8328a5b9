// cuda/ops/nn.cuh - device row ops as Thrust functors: softmax / log_softmax over any dim (forward and
// backward), layer_norm / rms_norm over the last dim (forward and backward), cross-entropy with
// ignore_index and label smoothing (forward and backward).
//
// Shape letters: C the dim the op runs along (any dim for softmax, the last for the others), A the dims
// before it, B the dims after it; a "row" is one (a, b). Inputs are any views: rows are found through a
// Strided map over the shape without C, and C is walked with the view's own stride. Outputs are fresh
// contiguous tensors in the input's layout, so row o = a B + b writes y[a C B + c B + b].
// One thread per row, walking C serially and summing in float64 (the CPU sums in float64 or in lanes
// of T): deterministic, and exact enough for float32 rows of any length; layer_norm / rms_norm and their dx one warp a
// row (coalesced reads, since 2026-12-07). dweight/dbias of layer_norm are one thread per column walking every row in
// order.
// Formulas (those of tensor/nn_kernels.cpp and nn_kernels_loss.cpp):
//   softmax      y = exp(x - m) / sum exp(x - m)        dx = y (dy - sum(dy y))
//   log_softmax  y = x - m - log sum exp(x - m)         dx = dy - exp(y) sum(dy)
//   layer_norm   mu = mean x, rstd = 1/sqrt(mean (x - mu)^2 + eps), xhat = (x - mu) rstd, y = xhat w + b
//                dxhat = dy w; dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)); dw = sum dy xhat; db = sum dy
//                (rms_norm: mu = 0 and no mean(dxhat) term)
//   cross_entropy  loss = lse - (1 - s) x_t - s mean(x); dx = g (softmax(x) - (1 - s) onehot(t) - s / C)
// What it is not: fast for few long rows (softmax, cross-entropy: a thread per row), or for layer_norm weight gradients
// over very many rows.
#pragma once
#include "cuda/ops/common.cuh"
#include "cuda/ops/warps.cuh"

namespace dl::ops {

// x viewed around `dim`: the rows map, the stride along C, and the sizes of the contiguous output.
struct RowLayout {
  Strided rows;
  int64_t stride = 1, C = 1, B = 1, nrows = 1;
};

inline RowLayout row_layout(const Tensor& x, int64_t dim, const char* op) {
  RowLayout L;
  Shape shape, strides;
  for (int64_t d = 0; d < x.dim(); d++) {
    if (d == dim) continue;
    shape.push_back(x.size(d));
    strides.push_back(x.strides()[d]);
    if (d > dim) L.B *= x.size(d);
  }
  L.rows = merge_dims(shape, {strides}, op)[0];
  L.stride = x.dim() == 0 ? 1 : x.strides()[dim];
  L.C = x.dim() == 0 ? 1 : x.size(dim);
  L.nrows = shape_numel(shape);
  return L;
}

// Where row o's element c lands in a contiguous tensor of the input's shape.
DL_HD inline int64_t out_index(int64_t o, int64_t c, int64_t C, int64_t B) { return (o / B) * C * B + c * B + o % B; }

// ---------------------------------------------------------------------------------------------
template <class T> struct SoftmaxF {
  const T* x;
  T* y;
  RowLayout L;
  bool log;
  DL_HD void operator()(int64_t o) const {
    const T* p = x + L.rows.offset(o);
    T m = p[0];
    for (int64_t c = 1; c < L.C; c++) m = p[c * L.stride] > m ? p[c * L.stride] : m;
    double s = 0;
    for (int64_t c = 0; c < L.C; c++) s += (double)m_exp(p[c * L.stride] - m);
    double lse = (double)m + ::log(s), inv = 1.0 / s;
    for (int64_t c = 0; c < L.C; c++) {
      T v = p[c * L.stride];
      y[out_index(o, c, L.C, L.B)] = log ? (T)((double)v - lse) : (T)((double)m_exp(v - m) * inv);
    }
  }
};

template <class T> struct SoftmaxBackwardF {
  const T *y, *dy;
  T* dx;
  RowLayout Ly, Lg;
  bool log;
  DL_HD void operator()(int64_t o) const {
    const T *py = y + Ly.rows.offset(o), *pg = dy + Lg.rows.offset(o);
    double s = 0;
    for (int64_t c = 0; c < Ly.C; c++) {
      T g = pg[c * Lg.stride];
      s += log ? (double)g : (double)g * (double)py[c * Ly.stride];
    }
    for (int64_t c = 0; c < Ly.C; c++) {
      T v = py[c * Ly.stride], g = pg[c * Lg.stride];
      dx[out_index(o, c, Ly.C, Ly.B)] = log ? g - m_exp(v) * (T)s : v * (g - (T)s);
    }
  }
};

// y: contiguous, x's shape; dim already wrapped.
template <class Exec> void softmax(const Exec& exec, const Tensor& x, int64_t dim, bool log, const Tensor& y) {
  RowLayout L = row_layout(x, dim, "softmax");
  if (L.C == 0) return;
  dispatch_float(x.dtype(), "softmax (cuda)", [&]<class T>() { for_n(exec, L.nrows, SoftmaxF<T>{dptr<T>(x), dptr<T>(y), L, log}); });
}

template <class Exec> void softmax_backward(const Exec& exec, const Tensor& y, const Tensor& dy, int64_t dim, bool log, const Tensor& dx) {
  RowLayout Ly = row_layout(y, dim, "softmax backward"), Lg = row_layout(dy, dim, "softmax backward");
  if (Ly.C == 0) return;
  dispatch_float(y.dtype(), "softmax backward (cuda)", [&]<class T>() {
    for_n(exec, Ly.nrows, SoftmaxBackwardF<T>{dptr<T>(y), dptr<T>(dy), dptr<T>(dx), Ly, Lg, log});
  });
}

// ---------------------------------------------------------------------------------------------
// layer_norm / rms_norm one warp a row (cuda/ops/warps.cuh): lane l takes the columns l, l + 32, ... (neighbouring lanes
// read neighbouring columns: one row's read is coalesced, where a thread per row read 32 rows at a stride), sums them in
// float64, and every lane adds the 32 partial sums in lane order from the warp's scratch (the same order on every
// launch). Scratch (doubles): the partials of two sums, then the row's mean.
constexpr int64_t kNormScratch = 2 * 32 + 1;

template <class T> struct NormWarpF {
  const T *x, *w, *b;  // w, b: contiguous [C] or null
  T *y, *mean, *rstd;  // mean: null for rms_norm
  RowLayout L;
  double eps;
  DL_HD void operator()(int64_t r, double* sm, Lanes ln) const {
    const T* p = x + L.rows.offset(r);
    const int64_t C = L.C, st = L.stride;
    double *part = sm, *mu_row = sm + 64;
    for (int l = ln.first; l < 32; l += ln.step) {
      double su = 0;
      if (mean)
        for (int64_t c = l; c < C; c += 32) su += (double)p[c * st];
      part[l] = su;
    }
    warp_sync();
    for (int l = ln.first; l < 32; l += ln.step) {  // mu, then each lane's share of sum (x - mu)^2
      double mu = 0, v = 0;
      for (int k = 0; k < 32; k++) mu += part[k];
      mu /= (double)C;
      for (int64_t c = l; c < C; c += 32) v += ((double)p[c * st] - mu) * ((double)p[c * st] - mu);  // two-pass
      part[32 + l] = v;
      if (l == 0) *mu_row = mu;
    }
    warp_sync();
    for (int l = ln.first; l < 32; l += ln.step) {
      double v = 0;
      for (int k = 0; k < 32; k++) v += part[32 + k];
      const T rs = (T)(1.0 / ::sqrt(v / (double)C + eps)), m = (T)*mu_row;
      for (int64_t c = l; c < C; c += 32) {
        const T h = (p[c * st] - m) * rs;
        y[r * C + c] = (w ? h * w[c] : h) + (b ? b[c] : (T)0);
      }
      if (l == 0) {
        rstd[r] = rs;
        if (mean) mean[r] = m;
      }
    }
  }
};

template <class T> struct NormBackwardDxWarpF {  // one warp a row, as NormWarpF
  const T *dy, *x, *mean, *rstd, *w;  // mean null for rms_norm, w may be null
  T* dx;
  RowLayout Lg, Lx;
  DL_HD void operator()(int64_t r, double* sm, Lanes ln) const {
    const T *pg = dy + Lg.rows.offset(r), *px = x + Lx.rows.offset(r);
    const int64_t C = Lx.C;
    const T m = mean ? mean[r] : (T)0, rs = rstd[r];
    for (int l = ln.first; l < 32; l += ln.step) {  // each lane's share of sum(dxhat) and sum(dxhat xhat)
      double s1 = 0, s2 = 0;
      for (int64_t c = l; c < C; c += 32) {
        const double dh = w ? (double)pg[c * Lg.stride] * w[c] : (double)pg[c * Lg.stride];
        s1 += dh;
        s2 += dh * (double)((px[c * Lx.stride] - m) * rs);
      }
      sm[l] = s1, sm[32 + l] = s2;
    }
    warp_sync();
    for (int l = ln.first; l < 32; l += ln.step) {
      double s1 = 0, s2 = 0;
      for (int k = 0; k < 32; k++) s1 += sm[k], s2 += sm[32 + k];
      const T a = mean ? (T)(s1 / (double)C) : (T)0, bb = (T)(s2 / (double)C);
      for (int64_t c = l; c < C; c += 32) {
        const T g = pg[c * Lg.stride], dh = w ? g * w[c] : g;
        dx[r * C + c] = rs * (dh - a - (px[c * Lx.stride] - m) * rs * bb);
      }
    }
  }
};

// dw[c] = sum_r dy xhat, db[c] = sum_r dy, in two levels (common.cuh's sum_slices): thread (s, c) adds rows s, s + S,
// ... of column c into partial[s, c] and partial[S + s, c] (f64; neighbouring threads read neighbouring columns), then
// one thread per column adds its S partials in order.
template <class T> struct NormBackwardParamsF {
  const T *dy, *x, *mean, *rstd;
  double* partial;  // (2 S, C): dw's partials, then db's
  RowLayout Lg, Lx;
  int64_t S;
  DL_HD void operator()(int64_t i) const {
    int64_t C = Lx.C, c = i % C, s = i / C;
    double sw = 0, sb = 0;
    for (int64_t r = s; r < Lx.nrows; r += S) {
      T g = dy[Lg.rows.offset(r) + c * Lg.stride], v = x[Lx.rows.offset(r) + c * Lx.stride];
      T m = mean ? mean[r] : (T)0;
      sw += (double)g * (double)((v - m) * rstd[r]);
      sb += (double)g;
    }
    partial[s * C + c] = sw;
    partial[(S + s) * C + c] = sb;
  }
};
template <class T> struct NormParamsFinishF {
  const double* partial;
  T *dw, *db;  // either may be null
  int64_t C, S;
  DL_HD void operator()(int64_t c) const {
    double sw = 0, sb = 0;
    for (int64_t s = 0; s < S; s++) sw += partial[s * C + c], sb += partial[(S + s) * C + c];
    if (dw) dw[c] = (T)sw;
    if (db) db[c] = (T)sb;
  }
};

// x any view with the normalised dim last; w, b, mean, rstd, y contiguous (undefined = none).
template <class Exec>
void layer_norm(const Exec& exec, const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Tensor& y, const Tensor& mean,
                const Tensor& rstd) {
  RowLayout L = row_layout(x, x.dim() - 1, "layer_norm");
  dispatch_float(x.dtype(), "layer_norm (cuda)", [&]<class T>() {
    auto ptr = [](const Tensor& t) { return t.defined() ? dptr<T>(t) : nullptr; };
    for_warps<double>(exec, L.nrows, kNormScratch, NormWarpF<T>{dptr<T>(x), ptr(w), ptr(b), dptr<T>(y), ptr(mean), dptr<T>(rstd), L, eps});
  });
}

// dy, x any views of one shape; mean (undefined for rms_norm), rstd, w contiguous; dx, dw, db contiguous or undefined.
template <class Exec>
void layer_norm_backward(const Exec& exec, const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& w,
                         const Tensor& dx, const Tensor& dw, const Tensor& db) {
  RowLayout Lg = row_layout(dy, dy.dim() - 1, "layer_norm backward"), Lx = row_layout(x, x.dim() - 1, "layer_norm backward");
  dispatch_float(x.dtype(), "layer_norm backward (cuda)", [&]<class T>() {
    auto ptr = [](const Tensor& t) { return t.defined() ? dptr<T>(t) : nullptr; };
    if (dx.defined())
      for_warps<double>(exec, Lx.nrows, kNormScratch,
                        NormBackwardDxWarpF<T>{dptr<T>(dy), dptr<T>(x), ptr(mean), dptr<T>(rstd), ptr(w), dptr<T>(dx), Lg, Lx});
    if (dw.defined() || db.defined()) {
      const int64_t S = sum_slices(Lx.C, Lx.nrows);  // scratch on x's device (the caching allocator on the GPU)
      Tensor partial = Tensor::empty({2 * S * Lx.C}, DType::f64, x.device());
      for_n(exec, S * Lx.C, NormBackwardParamsF<T>{dptr<T>(dy), dptr<T>(x), ptr(mean), dptr<T>(rstd), dptr<double>(partial), Lg, Lx, S});
      for_n(exec, Lx.C, NormParamsFinishF<T>{dptr<double>(partial), ptr(dw), ptr(db), Lx.C, S});
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Per row r: lse, the row's loss (0 when ignored) and valid (1 counted, 0 ignored, NaN for a target out
// of [0, C): the caller turns the NaN into an error, as the CPU checks targets before it starts).
template <class T> struct CrossEntropyF {
  const T* x;
  const int64_t* target;  // contiguous, one per row
  T *rowloss, *lse, *valid;
  RowLayout L;
  int64_t ignore_index;
  double ls;
  DL_HD void operator()(int64_t r) const {
    const T* p = x + L.rows.offset(r);
    T m = p[0];
    for (int64_t c = 1; c < L.C; c++) m = p[c * L.stride] > m ? p[c * L.stride] : m;
    double s = 0, sx = 0;
    for (int64_t c = 0; c < L.C; c++) {
      s += (double)m_exp(p[c * L.stride] - m);
      sx += (double)p[c * L.stride];
    }
    double l = (double)m + ::log(s);
    lse[r] = (T)l;
    int64_t t = target[r];
    if (t == ignore_index) {
      rowloss[r] = 0, valid[r] = 0;
    } else if (t < 0 || t >= L.C) {
      rowloss[r] = (T)NAN, valid[r] = (T)NAN;
    } else {
      rowloss[r] = (T)(l - (1.0 - ls) * (double)p[t * L.stride] - ls * sx / (double)L.C);
      valid[r] = 1;
    }
  }
};

// dx[r, :] = g_r (exp(x - lse) - s / C), minus g_r (1 - s) at the target; 0 on ignored rows.
template <class T> struct CrossEntropyBackwardF {
  const T *x, *lse, *scale;  // scale: g_r through a Strided map (a broadcast scalar has stride 0)
  const int64_t* target;
  T* dx;
  RowLayout L;
  Strided sg;
  int64_t ignore_index;
  double ls;
  DL_HD void operator()(int64_t r) const {
    T* d = dx + r * L.C;
    int64_t t = target[r];
    if (t == ignore_index || t < 0 || t >= L.C) {
      for (int64_t c = 0; c < L.C; c++) d[c] = 0;
      return;
    }
    const T* p = x + L.rows.offset(r);
    T g = scale[sg.offset(r)], l = lse[r], off = (T)(ls / (double)L.C);
    for (int64_t c = 0; c < L.C; c++) d[c] = g * (m_exp(p[c * L.stride] - l) - off);
    d[t] -= g * (T)(1.0 - ls);
  }
};

// logits any view (..., C); target contiguous i64 with one entry per row; rowloss, lse, valid contiguous.
template <class Exec>
void cross_entropy(const Exec& exec, const Tensor& logits, const Tensor& target, int64_t ignore_index, double ls,
                   const Tensor& rowloss, const Tensor& lse, const Tensor& valid) {
  RowLayout L = row_layout(logits, logits.dim() - 1, "cross_entropy");
  dispatch_float(logits.dtype(), "cross_entropy (cuda)", [&]<class T>() {
    for_n(exec, L.nrows,
          CrossEntropyF<T>{dptr<T>(logits), dptr<int64_t>(target), dptr<T>(rowloss), dptr<T>(lse), dptr<T>(valid), L, ignore_index, ls});
  });
}

// row_scale: a view with the target's shape (dy for reduction none, an expanded scalar otherwise).
template <class Exec>
void cross_entropy_backward(const Exec& exec, const Tensor& logits, const Tensor& target, const Tensor& lse, int64_t ignore_index,
                            double ls, const Tensor& row_scale, const Tensor& dx) {
  RowLayout L = row_layout(logits, logits.dim() - 1, "cross_entropy backward");
  Strided sg = merge_dims(row_scale.shape(), {row_scale.strides()}, "cross_entropy backward")[0];
  dispatch_float(logits.dtype(), "cross_entropy backward (cuda)", [&]<class T>() {
    for_n(exec, L.nrows,
          CrossEntropyBackwardF<T>{dptr<T>(logits), dptr<T>(lse), dptr<T>(row_scale), dptr<int64_t>(target), dptr<T>(dx), L, sg,
                                   ignore_index, ls});
  });
}

}  // namespace dl::ops
