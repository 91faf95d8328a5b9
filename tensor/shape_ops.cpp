// tensor/shape_ops.cpp - CPU kernels for tensor/shape_ops.h. Most are copy_into() (already strided and
// multithreaded) over narrowed views; flip and cumsum have their own loops.
#include "tensor/shape_ops.h"

#include <algorithm>

#include "tensor/backend.h"
#include "tensor/elementwise.h"
#include "tensor/indexing.h"

namespace dl {

Tensor cat(const std::vector<Tensor>& xs, int64_t dim) {
  if (xs.empty()) fail("cat: expected at least one tensor, got an empty list");
  const Tensor& x0 = xs[0];
  int64_t d = wrap_dim(dim, x0.dim(), "cat");
  Shape s = x0.shape();
  int64_t total = 0;
  for (size_t i = 0; i < xs.size(); i++) {
    const Tensor& x = xs[i];
    bool ok = x.dim() == x0.dim();
    for (int64_t k = 0; ok && k < x.dim(); k++)
      if (k != d && x.size(k) != s[k]) ok = false;
    if (!ok)
      fail("cat: input " + std::to_string(i) + " has shape " + shape_str(x.shape()) + " but input 0 has " + shape_str(s) +
           "; all dims except dim " + std::to_string(d) + " must match");
    if (x.dtype() != x0.dtype())
      fail(std::string("cat: input ") + std::to_string(i) + " is " + dtype_name(x.dtype()) + ", input 0 is " +
           dtype_name(x0.dtype()));
    total += x.size(d);
  }
  s[d] = total;
  Tensor out = Tensor::empty(s, x0.dtype(), x0.device());
  int64_t off = 0;
  for (const Tensor& x : xs) {
    if (x.size(d) > 0 && x.numel() > 0) copy_into(out.narrow(d, off, x.size(d)), x);
    off += x.size(d);
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& xs, int64_t dim) {
  if (xs.empty()) fail("stack: expected at least one tensor, got an empty list");
  int64_t d = wrap_dim(dim, xs[0].dim() + 1, "stack");
  std::vector<Tensor> u;
  for (size_t i = 0; i < xs.size(); i++) {
    if (xs[i].shape() != xs[0].shape())
      fail("stack: input " + std::to_string(i) + " has shape " + shape_str(xs[i].shape()) + " but input 0 has " +
           shape_str(xs[0].shape()) + "; all must be equal");
    u.push_back(xs[i].unsqueeze(d));
  }
  return cat(u, d);
}

std::vector<int64_t> chunk_sizes(int64_t n, int64_t chunk, const char* op) {
  if (chunk <= 0) fail(std::string(op) + ": chunk size must be positive, got " + std::to_string(chunk));
  std::vector<int64_t> s;
  for (int64_t i = 0; i < n; i += chunk) s.push_back(std::min(chunk, n - i));
  if (s.empty()) s.push_back(0);
  return s;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  int64_t d = wrap_dim(dim, x.dim(), "split");
  int64_t sum = 0;
  for (int64_t s : sizes) sum += s;
  if (sum != x.size(d))
    fail("split: sizes sum to " + std::to_string(sum) + " but dim " + std::to_string(d) + " of " + shape_str(x.shape()) +
         " has size " + std::to_string(x.size(d)));
  std::vector<Tensor> out;
  int64_t off = 0;
  for (int64_t s : sizes) {
    out.push_back(x.narrow(d, off, s));
    off += s;
  }
  return out;
}

std::vector<Tensor> split(const Tensor& x, int64_t chunk, int64_t dim) {
  return split(x, chunk_sizes(x.size(wrap_dim(dim, x.dim(), "split")), chunk, "split"), dim);
}

Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, double value) {
  if (pads.size() % 2 != 0 || (int64_t)pads.size() > 2 * x.dim())
    fail("pad: expected an even number of pads, at most 2 per dim, got " + std::to_string(pads.size()) + " for shape " +
         shape_str(x.shape()));
  Shape s = x.shape();
  Tensor src = x;
  std::vector<int64_t> dst_start(x.dim(), 0);
  for (size_t k = 0; k < pads.size() / 2; k++) {
    int64_t d = x.dim() - 1 - (int64_t)k, l = pads[2 * k], r = pads[2 * k + 1], n = x.size(d);
    s[d] = n + l + r;
    if (s[d] < 0)
      fail("pad: padding (" + std::to_string(l) + ", " + std::to_string(r) + ") leaves a negative size for dim " +
           std::to_string(d) + " of " + shape_str(x.shape()));
    // the part of x that survives (negative pads crop), and where it lands in the output
    int64_t s0 = std::max<int64_t>(0, -l), len = std::max<int64_t>(0, n - s0 - std::max<int64_t>(0, -r));
    src = src.narrow(d, s0, len);
    dst_start[d] = std::max<int64_t>(0, l);
  }
  Tensor out = full(s, value, x.dtype(), x.device());
  if (src.numel() == 0) return out;
  Tensor dst = out;
  for (int64_t d = 0; d < x.dim(); d++) dst = dst.narrow(d, dst_start[d], src.size(d));
  copy_into(dst, src);
  return out;
}

Tensor flip(const Tensor& x, const std::vector<int64_t>& dims) {
  int64_t nd = x.dim();
  std::vector<bool> f(nd, false);
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, nd, "flip");
    if (f[w]) fail("flip: dim " + std::to_string(w) + " given twice");
    f[w] = true;
  }
  if (x.device() != Device::cpu) {  // the device seam: each flipped dim an index_select of n-1 .. 0
    Tensor y = x;
    for (int64_t d = 0; d < nd; d++) {
      if (!f[d]) continue;
      std::vector<int64_t> rev(x.size(d));
      for (int64_t i = 0; i < x.size(d); i++) rev[i] = x.size(d) - 1 - i;
      y = index_select(y, d, from_vector(rev, {x.size(d)}));
    }
    return y.device() == x.device() && y.shares_storage_with(x) ? x.clone() : y;
  }
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  if (x.numel() == 0) return out;
  if (nd == 0) {
    copy_into(out, x);
    return out;
  }
  // A reversed dim is a negative stride starting from the last element; Tensor forbids negative strides,
  // so the loop carries its own signed strides.
  std::vector<int64_t> st(nd);
  int64_t base = 0;
  for (int64_t d = 0; d < nd; d++) {
    st[d] = f[d] ? -x.strides()[d] : x.strides()[d];
    if (f[d]) base += (x.size(d) - 1) * x.strides()[d];
  }
  int64_t inner = x.size(nd - 1), rows = x.numel() / inner;
  dispatch_all(x.dtype(), "flip", [&]<class T>() {
    const T* px = x.data<T>() + base;
    T* po = out.data<T>();
    parallel_for(rows, std::max<int64_t>(1, 32768 / inner), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++) {
        int64_t off = 0, rem = r;
        for (int64_t d = nd - 2; d >= 0; d--) {
          off += (rem % x.size(d)) * st[d];
          rem /= x.size(d);
        }
        const T* s = px + off;
        T* o = po + r * inner;
        for (int64_t i = 0; i < inner; i++) o[i] = s[i * st[nd - 1]];
      }
    });
  });
  return out;
}

Tensor roll(const Tensor& x, int64_t shift, int64_t dim) {
  int64_t d = wrap_dim(dim, x.dim(), "roll"), n = x.size(d);
  if (n == 0) return x.clone();
  int64_t s = ((shift % n) + n) % n;
  if (s == 0) return x.clone();
  return cat({x.narrow(d, n - s, s), x.narrow(d, 0, n - s)}, d);  // y[i] = x[(i - s) mod n]
}

Tensor cumsum(const Tensor& x, int64_t dim, bool reverse) {
  int64_t d = wrap_dim(dim, x.dim(), "cumsum");
  Tensor xc = x.contiguous();
  if (x.device() != Device::cpu) {  // the device seam: one thread per (o, i), j in order (the CPU's sums)
    Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
    if (x.numel() > 0) require_backend(x.device(), "cumsum").cumsum(xc, x.dim() ? d : 0, reverse, out);
    return out;
  }
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  int64_t n = x.size(d), outer = 1, inner = 1;
  for (int64_t k = 0; k < d; k++) outer *= x.size(k);
  for (int64_t k = d + 1; k < x.dim(); k++) inner *= x.size(k);
  if (x.numel() == 0) return out;
  const int64_t ic = 1024, nchunk = (inner + ic - 1) / ic;  // work unit: one outer index x one chunk of inner
  dispatch_all(x.dtype(), "cumsum", [&]<class T>() {
    const T* px = xc.data<T>();
    T* po = out.data<T>();
    parallel_for(outer * nchunk, std::max<int64_t>(1, 32768 / (n * std::min(inner, ic))), [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; u++) {
        int64_t o = u / nchunk, i0 = (u % nchunk) * ic, i1 = std::min(inner, i0 + ic);
        for (int64_t jj = 0; jj < n; jj++) {
          int64_t j = reverse ? n - 1 - jj : jj, prev = reverse ? j + 1 : j - 1;
          const T* xr = px + (o * n + j) * inner;
          T* yr = po + (o * n + j) * inner;
          if (jj == 0)
            for (int64_t i = i0; i < i1; i++) yr[i] = xr[i];
          else
            for (int64_t i = i0; i < i1; i++) yr[i] = po[(o * n + prev) * inner + i] + xr[i];
        }
      }
    });
  });
  return out;
}

static Tensor tri_mask(int64_t R, int64_t C, int64_t diag, DType dtype, bool lower) {
  Tensor out = Tensor::empty({R, C}, dtype);
  dispatch_all(dtype, "tril_mask", [&]<class T>() {
    T* p = out.data<T>();
    for (int64_t i = 0; i < R; i++)
      for (int64_t j = 0; j < C; j++) p[i * C + j] = (lower ? j <= i + diag : j >= i + diag) ? (T)1 : (T)0;
  });
  return out;
}
Tensor tril_mask(int64_t R, int64_t C, int64_t diag, DType dtype) { return tri_mask(R, C, diag, dtype, true); }
Tensor triu_mask(int64_t R, int64_t C, int64_t diag, DType dtype) { return tri_mask(R, C, diag, dtype, false); }

Tensor repeat_interleave(const Tensor& x, int64_t repeats, int64_t dim) {
  int64_t d = wrap_dim(dim, x.dim(), "repeat_interleave");
  if (repeats < 0) fail("repeat_interleave: repeats must be >= 0, got " + std::to_string(repeats));
  Shape e = x.shape(), s = x.shape();
  e.insert(e.begin() + d + 1, repeats);
  s[d] *= repeats;
  return x.unsqueeze(d + 1).expand(e).contiguous().view(s);
}

}  // namespace dl
