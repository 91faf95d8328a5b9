// tensor/reduce.cpp - CPU kernels for tensor/reduce.h.
//
// Every reduction sees its input as a contiguous (A, R, B) block: out[a, b] reduces x[a, :, b].
//   fast path : x is contiguous and the reduced dims are adjacent (size-1 dims ignored) -> no copy.
//               B == 1 (reducing trailing dims) walks contiguous rows; B > 1 (e.g. dim 0 of (N, C), the
//               bias-gradient case) accumulates a strip of up to kCols outputs while walking r, so every
//               load is still contiguous.
//   plain path: otherwise permute kept dims first and reduced dims last, copy (contiguous()), B = 1.
// Two kernels cover every op: sum_map (sum of f(x, centre) in float64, giving sum/mean/var/logsumexp)
// and arg_extreme (max/min with the index of the first extreme).
#include "tensor/reduce.h"

#include <cmath>
#include <limits>

#include "tensor/backend.h"
#include "tensor/elementwise.h"
#include "tensor/indexing.h"

namespace dl {

namespace {

constexpr int64_t kChunk = 16384;  // long rows are summed in chunks of this many elements; the order of the
                                   // chunk partials is fixed, so results do not depend on the thread count
constexpr int64_t kCols = 256;     // outputs accumulated together in the B > 1 case

void cpu_only(const Tensor& x, const char* op) {
  if (!x.defined()) fail(std::string(op) + ": the input tensor is undefined");
  if (x.device() != Device::cpu)
    fail(std::string(op) + ": implemented for CPU tensors only; this one is on " + device_name(x.device()));
}

// reduced[d] for every dim of a tensor of rank `rank`; an empty list means all dims.
std::vector<bool> reduced_mask(const Shape& shape, const Dims& dims, const char* op) {
  int64_t rank = (int64_t)shape.size();
  std::vector<bool> red(rank, dims.empty());
  for (int64_t d : dims) {
    if (d < -rank || d >= rank)
      fail(std::string(op) + ": dim " + std::to_string(d) + " out of range for an input of shape " + shape_str(shape) +
           " (valid: " + std::to_string(-rank) + " .. " + std::to_string(rank - 1) + ")");
    int64_t w = d < 0 ? d + rank : d;
    if (red[w]) fail(std::string(op) + ": dim " + std::to_string(d) + " appears twice in the dims list");
    red[w] = true;
  }
  return red;
}

struct Layout {
  Tensor src;  // contiguous, viewed as (A, R, B)
  int64_t A = 1, R = 1, B = 1;
  Shape keep_shape, out_shape;  // with and without keepdim
};

Layout make_layout(const Tensor& x, const Dims& dims, bool keepdim, const char* op) {
  cpu_only(x, op);
  dispatch_float(x.dtype(), op, []<class T>() {});
  const Shape& s = x.shape();
  int64_t nd = x.dim();
  std::vector<bool> red = reduced_mask(s, dims, op);
  Layout L;
  for (int64_t d = 0; d < nd; d++) {
    L.keep_shape.push_back(red[d] ? 1 : s[d]);
    if (!red[d] || keepdim) L.out_shape.push_back(red[d] ? 1 : s[d]);
  }
  // fast path: reduced dims of size > 1 form one block [first, last] of a contiguous tensor
  int64_t first = -1, last = -1, prev = -2, k = 0;
  bool block = true;
  for (int64_t d = 0; d < nd; d++) {
    if (s[d] == 1) continue;  // size-1 dims never break a block
    if (red[d]) {
      if (first < 0) first = d;
      else if (prev != k - 1) block = false;
      prev = k, last = d;
    }
    k++;
  }
  if (x.is_contiguous() && block) {
    L.src = x;
    if (first < 0) {  // nothing of size > 1 is reduced
      L.A = x.numel();
      return L;
    }
    for (int64_t d = 0; d < first; d++) L.A *= s[d];
    for (int64_t d = first; d <= last; d++) L.R *= s[d];
    for (int64_t d = last + 1; d < nd; d++) L.B *= s[d];
    return L;
  }
  // plain path: kept dims first, reduced dims last, one copy
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < nd; d++)
    if (!red[d]) perm.push_back(d), L.A *= s[d];
  for (int64_t d = 0; d < nd; d++)
    if (red[d]) perm.push_back(d), L.R *= s[d];
  L.src = x.permute(perm).contiguous();
  return L;
}

// out[a*B + b] = sum_r f(x[a, r, b], centre[a*B + b]) in float64 (centre = 0 when null).
template <class T, class F> std::vector<double> sum_map(const Layout& L, const double* centre, F f) {
  const int64_t A = L.A, R = L.R, B = L.B;
  std::vector<double> out(A * B, 0.0);
  const T* x = L.src.data<T>();
  if (R == 0) return out;
  if (B == 1) {
    int64_t nch = (R + kChunk - 1) / kChunk;
    std::vector<double> part(A * nch);
    parallel_for(A * nch, std::max<int64_t>(1, 32768 / std::min(R, kChunk)), [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; u++) {
        int64_t a = u / nch, r0 = (u % nch) * kChunk, r1 = std::min(R, r0 + kChunk);
        const T* p = x + a * R;
        double c = centre ? centre[a] : 0.0, s0 = 0, s1 = 0, s2 = 0, s3 = 0;  // 4 chains hide add latency
        int64_t r = r0;
        for (; r + 4 <= r1; r += 4) {
          s0 += f(p[r], c);
          s1 += f(p[r + 1], c);
          s2 += f(p[r + 2], c);
          s3 += f(p[r + 3], c);
        }
        for (; r < r1; r++) s0 += f(p[r], c);
        part[u] = (s0 + s1) + (s2 + s3);
      }
    });
    for (int64_t a = 0; a < A; a++) {
      double s = 0;
      for (int64_t k = 0; k < nch; k++) s += part[a * nch + k];
      out[a] = s;
    }
    return out;
  }
  int64_t ncol = (B + kCols - 1) / kCols;
  parallel_for(A * ncol, std::max<int64_t>(1, 32768 / (R * std::min(B, kCols))), [&](int64_t u0, int64_t u1) {
    double acc[kCols], c[kCols];
    for (int64_t u = u0; u < u1; u++) {
      int64_t a = u / ncol, b0 = (u % ncol) * kCols, nb = std::min(B - b0, kCols);
      for (int64_t j = 0; j < nb; j++) acc[j] = 0, c[j] = centre ? centre[a * B + b0 + j] : 0.0;
      const T* p = x + a * R * B + b0;
      for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < nb; j++) acc[j] += f(p[r * B + j], c[j]);
      for (int64_t j = 0; j < nb; j++) out[a * B + b0 + j] = acc[j];
    }
  });
  return out;
}

// vals/idx[a*B + b] = extreme of x[a, :, b] and the first r where it occurs. NaN beats every number.
template <class T, bool IsMax> void arg_extreme(const Layout& L, T* vals, int64_t* idx, const char* op) {
  const int64_t A = L.A, R = L.R, B = L.B;
  if (R == 0 && A * B > 0) fail(std::string(op) + ": cannot reduce over an empty dim (size 0)");
  const T* x = L.src.data<T>();
  auto better = [](T v, T best) { return IsMax ? (v > best) : (v < best); };
  parallel_for(A * B, std::max<int64_t>(1, 32768 / std::max<int64_t>(R, 1)), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; o++) {  // B > 1 strides by B; fine for the one-dim max/min uses
      int64_t a = o / B, b = o % B;
      const T* p = x + a * R * B + b;
      T best = p[0];
      int64_t bi = 0;
      if (!std::isnan(best))
        for (int64_t r = 1; r < R; r++) {
          T v = p[r * B];
          if (better(v, best) || std::isnan(v)) {
            best = v, bi = r;
            if (std::isnan(v)) break;
          }
        }
      vals[o] = best;
      if (idx) idx[o] = bi;
    }
  });
}

// The device seam of every reduction: x permuted (a view) so that kept dims come first and reduced dims
// last; the backend reduces the trailing dims. Results have the CPU's shapes (keepdim or not).
ValuesIndices device_reduce(ReduceOp op, const Tensor& x, const Dims& dims, bool keepdim, bool with_indices, const char* name) {
  std::vector<bool> red = reduced_mask(x.shape(), dims, name);
  std::vector<int64_t> perm;
  Shape out_shape;
  for (int64_t d = 0; d < x.dim(); d++)
    if (!red[d]) perm.push_back(d);
  int64_t nkept = (int64_t)perm.size();
  for (int64_t d = 0; d < x.dim(); d++) {
    if (red[d]) perm.push_back(d);
    if (!red[d] || keepdim) out_shape.push_back(red[d] ? 1 : x.size(d));
  }
  ValuesIndices r{Tensor::empty(out_shape, x.dtype(), x.device()),
                  with_indices ? Tensor::empty(out_shape, DType::i64, x.device()) : Tensor()};
  require_backend(x.device(), name).reduce(op, x.permute(perm), nkept, r.values, r.indices);
  return r;
}

bool on_device(const Tensor& x) { return x.defined() && x.device() != Device::cpu; }

template <class T> Tensor from_doubles(const std::vector<double>& v, const Shape& shape, double scale = 1.0) {
  Tensor out = Tensor::empty(shape, dtype_of<T>());
  T* p = out.data<T>();
  for (size_t i = 0; i < v.size(); i++) p[i] = (T)(v[i] * scale);
  return out;
}

template <bool IsMax> ValuesIndices extreme(const Tensor& x, int64_t dim, bool keepdim, const char* op) {
  if (on_device(x)) return device_reduce(IsMax ? ReduceOp::max : ReduceOp::min, x, x.dim() == 0 ? Dims{} : Dims{dim}, keepdim, true, op);
  cpu_only(x, op);
  if (x.dim() == 0) return {x.clone(), zeros({}, DType::i64)};
  Layout L = make_layout(x, {dim}, keepdim, op);
  ValuesIndices r{Tensor::empty(L.out_shape, x.dtype()), Tensor::empty(L.out_shape, DType::i64)};
  dispatch_float(x.dtype(), op, [&]<class T>() { arg_extreme<T, IsMax>(L, r.values.data<T>(), r.indices.data<int64_t>(), op); });
  return r;
}

}  // namespace

Shape reduced_shape_keepdim(const Shape& in, const Dims& dims, const char* op) {
  std::vector<bool> red = reduced_mask(in, dims, op);
  Shape k = in;
  for (size_t d = 0; d < in.size(); d++)
    if (red[d]) k[d] = 1;
  return k;
}

Tensor sum(const Tensor& x, const Dims& dims, bool keepdim) {
  if (on_device(x)) return device_reduce(ReduceOp::sum, x, dims, keepdim, false, "sum").values;
  Layout L = make_layout(x, dims, keepdim, "sum");
  return dispatch_float(x.dtype(), "sum", [&]<class T>() {
    return from_doubles<T>(sum_map<T>(L, nullptr, [](T v, double) { return (double)v; }), L.out_shape);
  });
}
Tensor sum(const Tensor& x) { return sum(x, {}, false); }

Tensor mean(const Tensor& x, const Dims& dims, bool keepdim) {
  if (on_device(x)) return device_reduce(ReduceOp::mean, x, dims, keepdim, false, "mean").values;
  Layout L = make_layout(x, dims, keepdim, "mean");
  return dispatch_float(x.dtype(), "mean", [&]<class T>() {
    return from_doubles<T>(sum_map<T>(L, nullptr, [](T v, double) { return (double)v; }), L.out_shape, 1.0 / (double)L.R);
  });
}
Tensor mean(const Tensor& x) { return mean(x, {}, false); }

Tensor var(const Tensor& x, const Dims& dims, bool unbiased, bool keepdim) {
  if (on_device(x)) return device_reduce(unbiased ? ReduceOp::var_unbiased : ReduceOp::var, x, dims, keepdim, false, "var").values;
  Layout L = make_layout(x, dims, keepdim, "var");
  return dispatch_float(x.dtype(), "var", [&]<class T>() {
    // two passes: the mean, then squared deviations from it (no catastrophic cancellation of E[x^2] - E[x]^2)
    std::vector<double> mu = sum_map<T>(L, nullptr, [](T v, double) { return (double)v; });
    for (double& m : mu) m /= (double)L.R;
    std::vector<double> ss = sum_map<T>(L, mu.data(), [](T v, double c) { return ((double)v - c) * ((double)v - c); });
    return from_doubles<T>(ss, L.out_shape, 1.0 / (double)(L.R - (unbiased ? 1 : 0)));
  });
}

Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim) {
  if (on_device(x)) return device_reduce(ReduceOp::logsumexp, x, dims, keepdim, false, "logsumexp").values;
  Layout L = make_layout(x, dims, keepdim, "logsumexp");
  return dispatch_float(x.dtype(), "logsumexp", [&]<class T>() {
    std::vector<T> m(L.A * L.B);
    arg_extreme<T, true>(L, m.data(), nullptr, "logsumexp");
    std::vector<double> c(m.size());
    for (size_t i = 0; i < m.size(); i++) c[i] = std::isinf(m[i]) ? 0.0 : (double)m[i];
    std::vector<double> s = sum_map<T>(L, c.data(), [](T v, double cc) { return std::exp((double)v - cc); });
    for (size_t i = 0; i < s.size(); i++) s[i] = c[i] + std::log(s[i]);
    return from_doubles<T>(s, L.out_shape);
  });
}

ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim) { return extreme<true>(x, dim, keepdim, "max"); }
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim) { return extreme<false>(x, dim, keepdim, "min"); }
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) { return extreme<true>(x, dim, keepdim, "argmax").indices; }
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) { return extreme<false>(x, dim, keepdim, "argmin").indices; }

Tensor amax(const Tensor& x, const Dims& dims, bool keepdim) {
  if (on_device(x)) return device_reduce(ReduceOp::max, x, dims, keepdim, false, "amax").values;
  Layout L = make_layout(x, dims, keepdim, "amax");
  Tensor out = Tensor::empty(L.out_shape, x.dtype());
  dispatch_float(x.dtype(), "amax", [&]<class T>() { arg_extreme<T, true>(L, out.data<T>(), nullptr, "amax"); });
  return out;
}

Tensor reduce_grad_broadcast(const Tensor& dy, const Shape& in_shape, const Dims& dims, double scale) {
  Shape keep = reduced_shape_keepdim(in_shape, dims, "reduce backward");
  Tensor e = dy.reshape(keep).expand(in_shape);
  return scale == 1.0 ? e.contiguous() : mul_scalar(e, scale);
}

Tensor index_reduce_backward(const Tensor& dy, const Tensor& indices, int64_t dim, const Shape& in_shape, bool keepdim) {
  if (!dy.defined()) fail("max/min backward: the input tensor is undefined");
  Tensor dx = zeros(in_shape, dy.dtype(), dy.device());
  if (in_shape.empty()) {
    dx.copy_(dy);
    return dx;
  }
  dim = wrap_dim(dim, (int64_t)in_shape.size(), "max/min backward");
  Tensor g = (keepdim ? dy : dy.unsqueeze(dim)).contiguous();
  Tensor ix = (keepdim ? indices : indices.unsqueeze(dim)).contiguous();
  if (dy.device() != Device::cpu) {  // on a device: dy scattered to the extremes' positions (each gets exactly one)
    scatter_add_(dx, dim, ix.to(dy.device()), g);
    return dx;
  }
  int64_t A = 1, R = in_shape[dim], B = 1;
  for (int64_t d = 0; d < dim; d++) A *= in_shape[d];
  for (size_t d = dim + 1; d < in_shape.size(); d++) B *= in_shape[d];
  dispatch_float(dy.dtype(), "max/min backward", [&]<class T>() {
    T* pdx = dx.data<T>();
    const T* pg = g.data<T>();
    const int64_t* pi = ix.data<int64_t>();
    parallel_for(A, std::max<int64_t>(1, 32768 / std::max<int64_t>(B, 1)), [&](int64_t a0, int64_t a1) {
      for (int64_t a = a0; a < a1; a++)
        for (int64_t b = 0; b < B; b++) pdx[(a * R + pi[a * B + b]) * B + b] = pg[a * B + b];
    });
  });
  return dx;
}

}  // namespace dl
