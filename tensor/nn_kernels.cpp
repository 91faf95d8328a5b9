// tensor/nn_kernels.cpp - CPU kernels for softmax, layer_norm/rms_norm and batch norm (the losses live in
// nn_kernels_loss.cpp, dropout in nn_kernels_dropout.cpp). Shape letters: A rows before the dim, C the dim, B after it.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "tensor/backend.h"
#include "tensor/elementwise.h"
#include "tensor/nn_kernels.h"
#include "tensor/reduce.h"

namespace dl {

void require_cpu_float(const Tensor& x, const char* op) {
  if (!x.defined()) fail(std::string(op) + ": the input tensor is undefined");
  if (x.device() != Device::cpu)
    fail(std::string(op) + ": implemented for CPU tensors only; this one is on " + device_name(x.device()));
  dispatch_float(x.dtype(), op, []<class T>() {});
}

namespace {

constexpr int64_t kCols = 256;         // columns handled together by the strided (plain) softmax path
constexpr int64_t kRowsPerChunk = 32;  // rows per partial in the cross-row sums (dweight, dbias, stats)

// x (contiguous) viewed as (A, C, B) around `dim`
struct ACB {
  int64_t A = 1, C = 1, B = 1;
};
ACB acb(const Shape& s, int64_t dim) {
  ACB r;
  for (int64_t d = 0; d < (int64_t)s.size(); d++) (d < dim ? r.A : d == dim ? r.C : r.B) *= s[d];
  return r;
}

// ---------------------------------------------------------------------------------------------
// softmax:     y = exp(x - m) / sum(exp(x - m)),  m = max(x)   (subtracting m avoids overflow)
// log_softmax: y = x - m - log(sum(exp(x - m)))
// Fast path (dim is last, B == 1): one contiguous row per task. Plain path (B > 1): a strip of up to
// kCols adjacent columns walked together along C, so loads stay contiguous.

// Fast path, one contiguous row: exp(x - m) goes to y first (a store-only loop, which vectorises; a
// loop that both calls exp and accumulates does not), then y is summed in kLanes partials in T (for rows
// of a few thousand that costs < 1e-6 relative). log_softmax uses y as the scratch for exp.
template <class T, bool Log> void softmax_row(const T* x, T* y, int64_t C) {
  T m = x[0];
#pragma omp simd reduction(max : m)
  for (int64_t c = 0; c < C; c++) m = x[c] > m ? x[c] : m;
#pragma omp simd
  for (int64_t c = 0; c < C; c++) y[c] = exp_t(x[c] - m);
  T s = lane_sum<T>(C, [&](int64_t c) { return y[c]; });
  if (Log) {
    T lse = m + std::log(s);
#pragma omp simd
    for (int64_t c = 0; c < C; c++) y[c] = x[c] - lse;
  } else {
    T inv = (T)1 / s;
#pragma omp simd
    for (int64_t c = 0; c < C; c++) y[c] *= inv;
  }
}
template <class T, bool Log> void softmax_strip(const T* x, T* y, int64_t C, int64_t B, int64_t nb) {
  T m[kCols];
  double s[kCols];
  for (int64_t j = 0; j < nb; j++) m[j] = x[j], s[j] = 0;
  for (int64_t c = 1; c < C; c++)
    for (int64_t j = 0; j < nb; j++) m[j] = x[c * B + j] > m[j] ? x[c * B + j] : m[j];
  for (int64_t c = 0; c < C; c++)
    for (int64_t j = 0; j < nb; j++) s[j] += exp_t(x[c * B + j] - m[j]);
  for (int64_t j = 0; j < nb; j++) s[j] = Log ? (double)m[j] + std::log(s[j]) : 1.0 / s[j];
  for (int64_t c = 0; c < C; c++)
    for (int64_t j = 0; j < nb; j++) y[c * B + j] = Log ? x[c * B + j] - (T)s[j] : (T)(exp_t(x[c * B + j] - m[j]) * s[j]);
}

// softmax backward:     dx = y (dy - sum(dy y))          (from dy_i/dx_j = y_i (delta_ij - y_j))
// log_softmax backward: dx = dy - exp(y) sum(dy)         (from dy_i/dx_j = delta_ij - softmax_j)
template <class T, bool Log> void softmax_bwd_row(const T* y, const T* dy, T* dx, int64_t C) {
  T s = lane_sum<T>(C, [&](int64_t c) { return Log ? dy[c] : dy[c] * y[c]; });
#pragma omp simd
  for (int64_t c = 0; c < C; c++) dx[c] = Log ? dy[c] - exp_t(y[c]) * s : y[c] * (dy[c] - s);
}
template <class T, bool Log> void softmax_bwd_strip(const T* y, const T* dy, T* dx, int64_t C, int64_t B, int64_t nb) {
  double s[kCols] = {};
  for (int64_t c = 0; c < C; c++)
    for (int64_t j = 0; j < nb; j++) s[j] += Log ? (double)dy[c * B + j] : (double)dy[c * B + j] * y[c * B + j];
  for (int64_t c = 0; c < C; c++)
    for (int64_t j = 0; j < nb; j++) {
      int64_t i = c * B + j;
      dx[i] = Log ? dy[i] - exp_t(y[i]) * (T)s[j] : y[i] * (dy[i] - (T)s[j]);
    }
}

// Run row(a) over A rows (B == 1) or strip(a, b0, nb) over column strips (B > 1), both cores.
template <class Row, class Strip> void over_acb(const ACB& s, Row&& row, Strip&& strip) {
  if (s.B == 1) {
    parallel_for(s.A, std::max<int64_t>(1, 16384 / std::max<int64_t>(s.C, 1)), [&](int64_t a0, int64_t a1) {
      for (int64_t a = a0; a < a1; a++) row(a);
    });
    return;
  }
  int64_t ns = (s.B + kCols - 1) / kCols;
  parallel_for(s.A * ns, std::max<int64_t>(1, 16384 / (s.C * std::min(s.B, kCols))), [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; u++) {
      int64_t a = u / ns, b0 = (u % ns) * kCols;
      strip(a, b0, std::min(kCols, s.B - b0));
    }
  });
}

template <bool Log> Tensor softmax_fwd(const Tensor& x, int64_t dim, const char* op) {
  if (x.defined() && x.device() != Device::cpu) {  // the device seam: any dim of any view
    Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
    require_backend(x.device(), op).softmax(x, x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), op), Log, y);
    return y;
  }
  require_cpu_float(x, op);
  if (x.dim() == 0) return Log ? zeros({}, x.dtype()) : ones({}, x.dtype());
  dim = wrap_dim(dim, x.dim(), op);
  Tensor xc = x.contiguous(), y = Tensor::empty(x.shape(), x.dtype());
  ACB s = acb(x.shape(), dim);
  if (s.C == 0) return y;
  dispatch_float(x.dtype(), op, [&]<class T>() {
    const T* px = xc.data<T>();
    T* py = y.data<T>();
    over_acb(
        s, [&](int64_t a) { softmax_row<T, Log>(px + a * s.C, py + a * s.C, s.C); },
        [&](int64_t a, int64_t b0, int64_t nb) {
          int64_t o = a * s.C * s.B + b0;
          softmax_strip<T, Log>(px + o, py + o, s.C, s.B, nb);
        });
  });
  return y;
}

template <bool Log> Tensor softmax_bwd(const Tensor& y, const Tensor& dy, int64_t dim, const char* op) {
  if (y.defined() && y.device() != Device::cpu) {  // the device seam
    if (dy.shape() != y.shape())
      fail(std::string(op) + ": dy has shape " + shape_str(dy.shape()) + ", expected the output's " + shape_str(y.shape()));
    Tensor dx = Tensor::empty(y.shape(), y.dtype(), y.device());
    require_backend(y.device(), op).softmax_backward(y, dy, y.dim() == 0 ? 0 : wrap_dim(dim, y.dim(), op), Log, dx);
    return dx;
  }
  require_cpu_float(y, op);
  if (dy.shape() != y.shape())
    fail(std::string(op) + ": dy has shape " + shape_str(dy.shape()) + ", expected the output's " + shape_str(y.shape()));
  if (y.dim() == 0) return zeros({}, y.dtype());
  dim = wrap_dim(dim, y.dim(), op);
  Tensor yc = y.contiguous(), gc = dy.to(y.dtype()).contiguous(), dx = Tensor::empty(y.shape(), y.dtype());
  ACB s = acb(y.shape(), dim);
  if (s.C == 0) return dx;
  dispatch_float(y.dtype(), op, [&]<class T>() {
    const T *py = yc.data<T>(), *pg = gc.data<T>();
    T* pd = dx.data<T>();
    over_acb(
        s, [&](int64_t a) { softmax_bwd_row<T, Log>(py + a * s.C, pg + a * s.C, pd + a * s.C, s.C); },
        [&](int64_t a, int64_t b0, int64_t nb) {
          int64_t o = a * s.C * s.B + b0;
          softmax_bwd_strip<T, Log>(py + o, pg + o, pd + o, s.C, s.B, nb);
        });
  });
  return dx;
}

// ---------------------------------------------------------------------------------------------
// Per-channel sums over rows, deterministic: rows are cut into chunks of kRowsPerChunk, each chunk fills
// its own partial[C] (in parallel), and the partials are added in chunk order.
// f(r, acc) adds row r's contribution into acc[0..K*C).
template <class F> std::vector<double> row_chunk_sums(int64_t rows, int64_t width, F&& f) {
  int64_t nch = std::max<int64_t>(1, (rows + kRowsPerChunk - 1) / kRowsPerChunk);
  std::vector<double> part(nch * width, 0.0), out(width, 0.0);
  parallel_for(nch, std::max<int64_t>(1, 16384 / std::max<int64_t>(kRowsPerChunk * width, 1)), [&](int64_t c0, int64_t c1) {
    for (int64_t k = c0; k < c1; k++)
      for (int64_t r = k * kRowsPerChunk; r < std::min(rows, (k + 1) * kRowsPerChunk); r++) f(r, &part[k * width]);
  });
  for (int64_t k = 0; k < nch; k++)
    for (int64_t j = 0; j < width; j++) out[j] += part[k * width + j];
  return out;
}

void check_param(const Tensor& p, int64_t C, const Tensor& x, const char* op, const char* what) {
  if (!p.defined()) return;
  if (p.shape() != Shape{C})
    fail(std::string(op) + ": " + what + " has shape " + shape_str(p.shape()) + ", expected [" + std::to_string(C) +
         "] to match the normalised dim of the input " + shape_str(x.shape()));
  if (p.dtype() != x.dtype())
    fail(std::string(op) + ": " + what + " dtype " + dtype_name(p.dtype()) + " differs from the input's " +
         dtype_name(x.dtype()));
}

// layer_norm (Center) and rms_norm (!Center) over rows of C:
//   mu = mean(x) (0 for rms), rstd = 1 / sqrt(mean((x - mu)^2) + eps), xhat = (x - mu) rstd, y = xhat w + b
template <bool Center> NormOut norm_fwd(const Tensor& x, const Tensor& w, const Tensor& b, double eps, const char* op) {
  bool on_device = x.defined() && x.device() != Device::cpu;
  if (!on_device) require_cpu_float(x, op);
  if (x.dim() < 1) fail(std::string(op) + ": expected an input with at least 1 dim, got a scalar");
  int64_t C = x.size(-1), R = x.numel() / std::max<int64_t>(C, 1);
  check_param(w, C, x, op, "weight");
  check_param(b, C, x, op, "bias");
  Shape rs(x.shape().begin(), x.shape().end() - 1);
  if (on_device) {  // the device seam: x read in place, one row per thread
    Device d = x.device();
    NormOut o{Tensor::empty(x.shape(), x.dtype(), d), Center ? Tensor::empty(rs, x.dtype(), d) : Tensor(), Tensor::empty(rs, x.dtype(), d)};
    require_backend(d, op).layer_norm(x, w.defined() ? w.contiguous() : w, b.defined() ? b.contiguous() : b, eps, o.y, o.mean, o.rstd);
    return o;
  }
  Tensor xc = x.contiguous(), wc = w.defined() ? w.contiguous() : w, bc = b.defined() ? b.contiguous() : b;
  NormOut o{Tensor::empty(x.shape(), x.dtype()), Center ? Tensor::empty(rs, x.dtype()) : Tensor(), Tensor::empty(rs, x.dtype())};
  dispatch_float(x.dtype(), op, [&]<class T>() {
    const T* px = xc.data<T>();
    const T* pw = w.defined() ? wc.data<T>() : nullptr;
    const T* pb = b.defined() ? bc.data<T>() : nullptr;
    T *py = o.y.data<T>(), *pr = o.rstd.data<T>(), *pm = Center ? o.mean.data<T>() : nullptr;
    parallel_for(R, std::max<int64_t>(1, 16384 / std::max<int64_t>(C, 1)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++) {
        const T* xr = px + r * C;
        T* yr = py + r * C;
        double mu = 0, v = 0;
        if (Center) {
#pragma omp simd reduction(+ : mu)
          for (int64_t c = 0; c < C; c++) mu += xr[c];
          mu /= (double)C;
        }
#pragma omp simd reduction(+ : v)
        for (int64_t c = 0; c < C; c++) v += ((double)xr[c] - mu) * ((double)xr[c] - mu);  // two-pass variance
        T rstd = (T)(1.0 / std::sqrt(v / (double)C + eps)), m = (T)mu;
#pragma omp simd
        for (int64_t c = 0; c < C; c++) {
          T h = (xr[c] - m) * rstd;
          yr[c] = (pw ? h * pw[c] : h) + (pb ? pb[c] : (T)0);
        }
        pr[r] = rstd;
        if (Center) pm[r] = m;
      }
    });
  });
  return o;
}

// Backward in one pass over rows (see autograd/nn_ops.h for the derivation):
//   dxhat = dy w;  dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat))   (rms: no mean(dxhat) term)
//   dw = sum_rows(dy xhat);  db = sum_rows(dy)
template <bool Center>
NormGrads norm_bwd(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& w, bool need_dx,
                   bool need_dw, bool need_db, const char* op) {
  bool on_device = x.defined() && x.device() != Device::cpu;
  if (!on_device) require_cpu_float(x, op);
  if (dy.shape() != x.shape())
    fail(std::string(op) + ": dy has shape " + shape_str(dy.shape()) + ", expected " + shape_str(x.shape()));
  int64_t C = x.size(-1), R = x.numel() / std::max<int64_t>(C, 1);
  if (on_device) {  // the device seam
    Device d = x.device();
    NormGrads g;
    if (need_dx) g.dx = Tensor::empty(x.shape(), x.dtype(), d);
    if (need_dw) g.dweight = Tensor::empty({C}, x.dtype(), d);
    if (need_db && Center) g.dbias = Tensor::empty({C}, x.dtype(), d);
    require_backend(d, op).layer_norm_backward(dy, x, Center ? mean.contiguous() : Tensor(), rstd.contiguous(),
                                               w.defined() ? w.contiguous() : w, g.dx, g.dweight, g.dbias);
    return g;
  }
  Tensor xc = x.contiguous(), gc = dy.to(x.dtype()).contiguous(), rc = rstd.contiguous(), mc = Center ? mean.contiguous() : mean;
  Tensor wc = w.defined() ? w.contiguous() : w;
  NormGrads g;
  if (need_dx) g.dx = Tensor::empty(x.shape(), x.dtype());
  dispatch_float(x.dtype(), op, [&]<class T>() {
    const T *px = xc.data<T>(), *pg = gc.data<T>(), *pr = rc.data<T>(), *pm = Center ? mc.data<T>() : nullptr;
    const T* pw = w.defined() ? wc.data<T>() : nullptr;
    T* pd = need_dx ? g.dx.data<T>() : nullptr;
    auto dx_row = [&](int64_t r) {  // dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)), dxhat = dy w
      const T *xr = px + r * C, *gr = pg + r * C;
      T m = Center ? pm[r] : (T)0, rs = pr[r];
      double s1 = 0, s2 = 0;  // sum(dxhat), sum(dxhat xhat)
#pragma omp simd reduction(+ : s1, s2)
      for (int64_t c = 0; c < C; c++) {
        double dh = pw ? (double)gr[c] * pw[c] : (double)gr[c];
        s1 += dh;
        s2 += dh * (double)((xr[c] - m) * rs);
      }
      T a = Center ? (T)(s1 / (double)C) : (T)0, bb = (T)(s2 / (double)C);
#pragma omp simd
      for (int64_t c = 0; c < C; c++) {
        T dh = pw ? gr[c] * pw[c] : gr[c];
        pd[r * C + c] = rs * (dh - a - (xr[c] - m) * rs * bb);
      }
    };
    if (!need_dw && !need_db) {
      if (need_dx)
        parallel_for(R, std::max<int64_t>(1, 16384 / std::max<int64_t>(C, 1)), [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; r++) dx_row(r);
        });
    } else {  // one pass over x and dy: dx of the row while it is in cache, then its share of dw and db
      std::vector<double> s = row_chunk_sums(R, 2 * C, [&](int64_t r, double* acc) {
        if (need_dx) dx_row(r);
        const T *xr = px + r * C, *gr = pg + r * C;
        T m = Center ? pm[r] : (T)0, rs = pr[r];
#pragma omp simd
        for (int64_t c = 0; c < C; c++) {
          acc[c] += (double)gr[c] * (double)((xr[c] - m) * rs);
          acc[C + c] += (double)gr[c];
        }
      });
      if (need_dw) g.dweight = from_vector(std::vector<double>(s.begin(), s.begin() + C), {C}).to(x.dtype());
      if (need_db) g.dbias = from_vector(std::vector<double>(s.begin() + C, s.end()), {C}).to(x.dtype());
    }
  });
  return g;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_fwd<false>(x, dim, "softmax"); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_fwd<true>(x, dim, "log_softmax"); }
Tensor softmax_backward(const Tensor& y, const Tensor& dy, int64_t dim) {
  return softmax_bwd<false>(y, dy, dim, "softmax backward");
}
Tensor log_softmax_backward(const Tensor& y, const Tensor& dy, int64_t dim) {
  return softmax_bwd<true>(y, dy, dim, "log_softmax backward");
}

NormOut layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  return norm_fwd<true>(x, w, b, eps, "layer_norm");
}
NormGrads layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& w,
                              bool need_dx, bool need_dw, bool need_db) {
  return norm_bwd<true>(dy, x, mean, rstd, w, need_dx, need_dw, need_db, "layer_norm backward");
}
NormOut rms_norm(const Tensor& x, const Tensor& w, double eps) { return norm_fwd<false>(x, w, Tensor(), eps, "rms_norm"); }
NormGrads rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& rstd, const Tensor& w, bool need_dx, bool need_dw) {
  return norm_bwd<false>(dy, x, Tensor(), rstd, w, need_dx, need_dw, false, "rms_norm backward");
}

// ---------------------------------------------------------------------------------------------
// batch norm (training): per channel c over n = N * L elements,
//   mu_c = mean(x[:, c, :]), var_c = mean((x - mu_c)^2), rstd_c = 1/sqrt(var_c + eps), y = xhat w + b
// Backward: the layer_norm formula with the mean taken over (N, L) per channel instead of over C per row.
// ---- batch norm on a device: composed of device ops ----
// The statistics are device reductions over every dim but C (f64 accumulation, as the CPU's), the rest broadcasting
// elementwise ops on per-channel [C] tensors viewed as (1, C) or (1, C, 1): the formulas of the CPU kernels below.
namespace {

Shape channel_view(const Tensor& x) { return x.dim() == 2 ? Shape{1, x.size(1)} : Shape{1, x.size(1), 1}; }
Dims stat_dims(const Tensor& x) { return x.dim() == 2 ? Dims{0} : Dims{0, 2}; }

BatchNormOut device_batch_norm_train(const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  Shape cv = channel_view(x);
  BatchNormOut o;
  o.mean = mean(x, stat_dims(x));
  o.var = var(x, stat_dims(x), /*unbiased=*/false);
  o.var_unbiased = var(x, stat_dims(x), /*unbiased=*/true);
  o.rstd = rsqrt(add_scalar(o.var, eps));
  Tensor scale = w.defined() ? mul(o.rstd, w) : o.rstd;  // y = x scale + (b - mean scale)
  Tensor shift = b.defined() ? sub(b, mul(o.mean, scale)) : neg(mul(o.mean, scale));
  o.y = add(mul(x, scale.reshape(cv)), shift.reshape(cv)).contiguous();
  return o;
}

// dx = w rstd (dy - mean(dy) - xhat mean(dy xhat)), dw = sum(dy xhat), db = sum(dy), sums over every dim but C
NormGrads device_batch_norm_train_backward(const Tensor& dy, const Tensor& x, const Tensor& mean_c, const Tensor& rstd,
                                           const Tensor& w, bool need_dx, bool need_dw, bool need_db) {
  Shape cv = channel_view(x);
  Dims d = stat_dims(x);
  double n = (double)(x.numel() / x.size(1));
  Tensor xhat = mul(sub(x, mean_c.reshape(cv)), rstd.reshape(cv));
  Tensor sdy = sum(dy, d), sdyx = sum(mul(dy, xhat), d);
  NormGrads g;
  if (need_db) g.dbias = sdy;
  if (need_dw) g.dweight = sdyx;
  if (need_dx) {
    Tensor k = w.defined() ? mul(w, rstd) : rstd;
    Tensor inner = sub(sub(dy, mul_scalar(sdy, 1.0 / n).reshape(cv)), mul(xhat, mul_scalar(sdyx, 1.0 / n).reshape(cv)));
    g.dx = mul(inner, k.reshape(cv)).contiguous();
  }
  return g;
}

}  // namespace

BatchNormOut batch_norm_train(const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  const char* op = "batch_norm";
  if (!x.defined()) fail(std::string(op) + ": the input tensor is undefined");
  const bool on_device = x.device() != Device::cpu;
  if (!on_device) require_cpu_float(x, op);
  if (x.dim() != 2 && x.dim() != 3) fail(std::string(op) + ": expected (N, C) or (B, C, L), got " + shape_str(x.shape()));
  ACB s = acb(x.shape(), 1);
  int64_t C = s.C, n = s.A * s.B;
  if (n < 1) fail(std::string(op) + ": no elements per channel in " + shape_str(x.shape()));
  check_param(w, C, x, op, "weight");
  check_param(b, C, x, op, "bias");
  if (on_device) return device_batch_norm_train(x, w, b, eps);
  Tensor xc = x.contiguous(), wc = w.defined() ? w.contiguous() : w, bc = b.defined() ? b.contiguous() : b;
  BatchNormOut o;
  o.y = Tensor::empty(x.shape(), x.dtype());
  dispatch_float(x.dtype(), op, [&]<class T>() {
    const T* px = xc.data<T>();
    std::vector<double> mu = row_chunk_sums(s.A, C, [&](int64_t a, double* acc) {
      for (int64_t c = 0; c < C; c++)
        for (int64_t l = 0; l < s.B; l++) acc[c] += px[(a * C + c) * s.B + l];
    });
    for (double& m : mu) m /= (double)n;
    std::vector<double> v = row_chunk_sums(s.A, C, [&](int64_t a, double* acc) {
      for (int64_t c = 0; c < C; c++)
        for (int64_t l = 0; l < s.B; l++) {
          double d = px[(a * C + c) * s.B + l] - mu[c];
          acc[c] += d * d;
        }
    });
    std::vector<double> var(C), varu(C), rstd(C);
    for (int64_t c = 0; c < C; c++) {
      var[c] = v[c] / (double)n;
      varu[c] = n > 1 ? v[c] / (double)(n - 1) : NAN;
      rstd[c] = 1.0 / std::sqrt(var[c] + eps);
    }
    o.mean = from_vector(mu, {C}).to(x.dtype());
    o.var = from_vector(var, {C}).to(x.dtype());
    o.var_unbiased = from_vector(varu, {C}).to(x.dtype());
    o.rstd = from_vector(rstd, {C}).to(x.dtype());
    const T* pw = w.defined() ? wc.data<T>() : nullptr;
    const T* pb = b.defined() ? bc.data<T>() : nullptr;
    T* py = o.y.data<T>();
    parallel_for(s.A * C, std::max<int64_t>(1, 16384 / s.B), [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; u++) {
        int64_t c = u % C;
        T scale = (T)rstd[c] * (pw ? pw[c] : (T)1), shift = (pb ? pb[c] : (T)0) - (T)mu[c] * scale;
        for (int64_t l = 0; l < s.B; l++) py[u * s.B + l] = px[u * s.B + l] * scale + shift;
      }
    });
  });
  return o;
}

NormGrads batch_norm_train_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& w,
                                    bool need_dx, bool need_dw, bool need_db) {
  const char* op = "batch_norm backward";
  if (!x.defined()) fail(std::string(op) + ": the input tensor is undefined");
  const bool on_device = x.device() != Device::cpu;
  if (!on_device) require_cpu_float(x, op);
  if (dy.shape() != x.shape())
    fail(std::string(op) + ": dy has shape " + shape_str(dy.shape()) + ", expected " + shape_str(x.shape()));
  if (on_device) return device_batch_norm_train_backward(dy, x, mean, rstd, w, need_dx, need_dw, need_db);
  ACB s = acb(x.shape(), 1);
  int64_t C = s.C, n = s.A * s.B;
  Tensor xc = x.contiguous(), gc = dy.to(x.dtype()).contiguous();
  Tensor mc = mean.to(DType::f64).contiguous(), rc = rstd.to(DType::f64).contiguous();
  Tensor wc = w.defined() ? w.to(DType::f64).contiguous() : w;
  NormGrads g;
  dispatch_float(x.dtype(), op, [&]<class T>() {
    const T *px = xc.data<T>(), *pg = gc.data<T>();
    const double *pm = mc.data<double>(), *pr = rc.data<double>(), *pw = w.defined() ? wc.data<double>() : nullptr;
    // sums[c] = sum dy, sums[C + c] = sum dy xhat
    std::vector<double> sums = row_chunk_sums(s.A, 2 * C, [&](int64_t a, double* acc) {
      for (int64_t c = 0; c < C; c++)
        for (int64_t l = 0; l < s.B; l++) {
          int64_t i = (a * C + c) * s.B + l;
          acc[c] += pg[i];
          acc[C + c] += (double)pg[i] * ((px[i] - pm[c]) * pr[c]);
        }
    });
    if (need_db) g.dbias = from_vector(std::vector<double>(sums.begin(), sums.begin() + C), {C}).to(x.dtype());
    if (need_dw) g.dweight = from_vector(std::vector<double>(sums.begin() + C, sums.end()), {C}).to(x.dtype());
    if (!need_dx) return;
    g.dx = Tensor::empty(x.shape(), x.dtype());
    T* pd = g.dx.data<T>();
    parallel_for(s.A * C, std::max<int64_t>(1, 16384 / s.B), [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; u++) {
        int64_t c = u % C;
        double k = (pw ? pw[c] : 1.0) * pr[c], mdy = sums[c] / (double)n, mdyx = sums[C + c] / (double)n;
        for (int64_t l = 0; l < s.B; l++) {
          int64_t i = u * s.B + l;
          pd[i] = (T)(k * (pg[i] - mdy - (px[i] - pm[c]) * pr[c] * mdyx));
        }
      }
    });
  });
  return g;
}

}  // namespace dl
