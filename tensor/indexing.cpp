// tensor/indexing.cpp - CPU kernels for tensor/indexing.h.
//
// gather/scatter address every operand through per-axis offset tables: for the dims before d ("outer") and
// after d ("inner") of index's shape, outer_off[o] and inner_off[i] hold each operand's element offset, so
// element (o, j, i) of an operand sits at outer_off[o] + j * stride_d + inner_off[i]. That handles any
// strides (and operands larger than index in the non-d dims) with one multiply-add per element.
#include "tensor/indexing.h"

#include <algorithm>
#include <cstring>

#include "tensor/backend.h"
#include "tensor/elementwise.h"
#include "tensor/reduce.h"

namespace dl {

namespace {

void check_index_dtype(const Tensor& idx, const char* op) {
  if (idx.dtype() != DType::i64) fail(std::string(op) + ": index must be i64, got " + dtype_name(idx.dtype()));
}

// Every index in [0, bound); named by value and bound when not. Runs serially before any parallel kernel.
void check_range(const Tensor& idx_c, int64_t bound, const char* op, int64_t dim) {
  const int64_t* p = idx_c.data<int64_t>();
  for (int64_t k = 0; k < idx_c.numel(); k++)
    if (p[k] < 0 || p[k] >= bound)
      fail(std::string(op) + ": index " + std::to_string(p[k]) + " out of range for dim " + std::to_string(dim) + " of size " +
           std::to_string(bound) + " (expected 0 <= index < " + std::to_string(bound) + ")");
}

bool on_device(const Tensor& t) { return t.defined() && t.device() != Device::cpu; }

// The index moved to the data's device (a no-op when it is there already).
Tensor index_on(const Tensor& index, const Tensor& data) {
  return index.device() == data.device() ? index : index.to(data.device());
}

void same_device(const Tensor& a, const Tensor& b, const char* op) {
  if (a.device() != b.device())
    fail(std::string(op) + ": operands on different devices (" + device_name(a.device()) + " and " + device_name(b.device()) + ")");
}

// The index of a device op on `data`, checked where it lives, then on data's device. An index on the host (a batch
// the app built) is checked there at once, before it is moved: no read back. An index on the device (a prediction
// fed back) is checked there without a read back: the op runs on the index clamped into [0, bound), and the count of
// indices it changed is a deferred check (tensor/backend.h) that fails, naming the op, at the next read back.
Tensor device_index(const Tensor& index, const Tensor& data, int64_t bound, const char* op, int64_t dim) {
  Tensor idx = index.contiguous();
  const std::string what = std::string(op) + ": index out of range for dim " + std::to_string(dim) + " of size " +
                           std::to_string(bound) + " (expected 0 <= index < " + std::to_string(bound) + ")";
  if (idx.device() == Device::cpu) {
    check_range(idx, bound, op, dim);
    return index_on(idx, data);
  }
  if (idx.numel() == 0) return index_on(idx, data);
  if (bound <= 0) fail(what);  // every index is out of range of an empty dim
  Tensor safe = clamp(idx, 0.0, (double)(bound - 1));
  defer_device_check(sum(ne(idx, safe).to(DType::f64)), what);
  return index_on(safe, data);
}

// The device seam of embedding: weight (V, D) rows gathered for idx (checked by device_index). In every device seam
// of this file an index may live on the host: it is moved to the data's device (indices are small; the data
// operands themselves must share a device).
Tensor device_embedding(const Tensor& weight, const Tensor& index, const char* op) {
  if (weight.dim() != 2) fail(std::string(op) + ": weight must be (V, D), got " + shape_str(weight.shape()));
  Tensor idx = device_index(index, weight, weight.size(0), op, 0);
  Shape s = index.shape();
  s.push_back(weight.size(1));
  Tensor out = Tensor::empty(s, weight.dtype(), weight.device());
  if (out.numel() > 0) require_backend(weight.device(), op).embedding(weight.contiguous(), idx, out);
  return out;
}

// Offsets of every coordinate of dims [d0, d1) of `shape`, row-major, walking `strides`.
std::vector<int64_t> axis_offsets(const Shape& shape, const Shape& strides, int64_t d0, int64_t d1) {
  int64_t n = 1;
  for (int64_t k = d0; k < d1; k++) n *= shape[k];
  std::vector<int64_t> off(n);
  std::vector<int64_t> c(d1 - d0, 0);
  int64_t cur = 0;
  for (int64_t e = 0; e < n; e++) {
    off[e] = cur;
    for (int64_t k = d1 - 1; k >= d0; k--) {
      cur += strides[k];
      if (++c[k - d0] < shape[k]) break;
      cur -= strides[k] * shape[k];
      c[k - d0] = 0;
    }
  }
  return off;
}

// index's shape must fit inside `t` in every dim but d (as torch requires for gather/scatter).
void check_fits(const Tensor& index, const Tensor& t, int64_t d, const char* op, const char* tname, bool include_d) {
  bool ok = index.dim() == t.dim();
  for (int64_t k = 0; ok && k < t.dim(); k++)
    if ((k != d || include_d) && index.size(k) > t.size(k)) ok = false;
  if (!ok)
    fail(std::string(op) + ": index " + shape_str(index.shape()) + " does not fit " + tname + " " + shape_str(t.shape()) +
         " (same rank, index.size(k) <= " + tname + ".size(k) for k " + (include_d ? "in every dim" : "!= dim") + ")");
}

}  // namespace

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index0) {
  check_index_dtype(index0, "gather");
  int64_t d = wrap_dim(dim, x.dim(), "gather");
  check_fits(index0, x, d, "gather", "x", false);
  if (on_device(x)) {  // the device seam: x read in place, the index checked where it lives
    Tensor idx = device_index(index0, x, x.size(d), "gather", d);
    Tensor out = Tensor::empty(idx.shape(), x.dtype(), x.device());
    if (out.numel() > 0) require_backend(x.device(), "gather").gather(x, d, idx, out);
    return out;
  }
  Tensor index = index_on(index0, x), idx = index.contiguous();
  check_range(idx, x.size(d), "gather", d);
  Tensor out = Tensor::empty(index.shape(), x.dtype());
  if (out.numel() == 0) return out;
  const Shape& is = index.shape();
  int64_t n = is[d];
  std::vector<int64_t> xo = axis_offsets(is, x.strides(), 0, d), xi = axis_offsets(is, x.strides(), d + 1, x.dim());
  int64_t outer = (int64_t)xo.size(), inner = (int64_t)xi.size(), xsd = x.strides()[d];
  dispatch_all(x.dtype(), "gather", [&]<class T>() {
    const T* px = x.data<T>();
    const int64_t* pi = idx.data<int64_t>();
    T* po = out.data<T>();
    parallel_for(outer * n, std::max<int64_t>(1, 16384 / inner), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++) {  // r = o * n + j: one row of `inner` outputs
        const T* xr = px + xo[r / n];
        for (int64_t i = 0; i < inner; i++) po[r * inner + i] = xr[pi[r * inner + i] * xsd + xi[i]];
      }
    });
  });
  return out;
}

void scatter_add_(const Tensor& out, int64_t dim, const Tensor& index0, const Tensor& src) {
  check_index_dtype(index0, "scatter_add");
  same_device(out, src, "scatter_add");
  const Tensor& index = index0;  // moved to out's device below, after its check
  if (!out.is_contiguous()) fail("scatter_add_: out must be contiguous");
  if (src.dtype() != out.dtype())
    fail(std::string("scatter_add: src is ") + dtype_name(src.dtype()) + ", self is " + dtype_name(out.dtype()));
  int64_t d = wrap_dim(dim, out.dim(), "scatter_add");
  check_fits(index, out, d, "scatter_add", "self", false);
  check_fits(index, src, d, "scatter_add", "src", true);
  if (on_device(out)) {  // the device seam: one thread per (o, i), j in order; the index checked where it lives
    Tensor di = device_index(index0, out, out.size(d), "scatter_add", d);
    if (di.numel() > 0) require_backend(out.device(), "scatter_add").scatter_add(out, d, di, src);
    return;
  }
  Tensor idx = index_on(index0, out).contiguous();
  check_range(idx, out.size(d), "scatter_add", d);
  if (idx.numel() == 0) return;
  const Shape& is = index.shape();
  int64_t n = is[d];
  std::vector<int64_t> oo = axis_offsets(is, out.strides(), 0, d), oi = axis_offsets(is, out.strides(), d + 1, out.dim());
  std::vector<int64_t> so = axis_offsets(is, src.strides(), 0, d), si = axis_offsets(is, src.strides(), d + 1, src.dim());
  int64_t outer = (int64_t)oo.size(), inner = (int64_t)oi.size(), osd = out.strides()[d], ssd = src.strides()[d];
  const int64_t ic = 256, nchunk = (inner + ic - 1) / ic;
  dispatch_all(out.dtype(), "scatter_add", [&]<class T>() {
    const T* ps = src.data<T>();
    const int64_t* pi = idx.data<int64_t>();
    T* po = out.data<T>();
    // unit = (o, chunk of i): all updates of one (o, i) stay in one thread, so no two threads touch one element
    parallel_for(outer * nchunk, std::max<int64_t>(1, 16384 / (n * std::min(inner, ic))), [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; u++) {
        int64_t o = u / nchunk, i0 = (u % nchunk) * ic, i1 = std::min(inner, i0 + ic);
        for (int64_t j = 0; j < n; j++) {
          const int64_t* ir = pi + (o * n + j) * inner;
          const T* sr = ps + so[o] + j * ssd;
          T* orow = po + oo[o];
          for (int64_t i = i0; i < i1; i++) orow[ir[i] * osd + oi[i]] += sr[si[i]];
        }
      }
    });
  });
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = x.clone();
  scatter_add_(out, dim, index, src);
  return out;
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index0) {
  check_index_dtype(index0, "index_select");
  Tensor index = index_on(index0, x);
  if (index.dim() > 1) fail("index_select: index must be 1-D, got " + shape_str(index.shape()));
  int64_t d = wrap_dim(dim, x.dim(), "index_select");
  if (on_device(x)) {  // the device seam: an embedding lookup of dim d's slices, d moved to the front and back
    Tensor xt = x.transpose(0, d).contiguous();
    Tensor rows = device_embedding(xt.reshape({xt.size(0), -1}), index.reshape({-1}), "index_select");  // (n, rest)
    Shape s = xt.shape();
    s[0] = index.numel();
    return rows.view(s).transpose(0, d).contiguous();
  }
  Tensor idx = index.contiguous(), xc = x.contiguous();
  check_range(idx, x.size(d), "index_select", d);
  int64_t n = idx.numel(), nx = x.size(d), outer = 1, inner = 1;
  for (int64_t k = 0; k < d; k++) outer *= x.size(k);
  for (int64_t k = d + 1; k < x.dim(); k++) inner *= x.size(k);
  Shape s = x.shape();
  s[d] = n;
  Tensor out = Tensor::empty(s, x.dtype());
  if (out.numel() == 0) return out;
  dispatch_all(x.dtype(), "index_select", [&]<class T>() {
    const T* px = xc.data<T>();
    const int64_t* pi = idx.data<int64_t>();
    T* po = out.data<T>();
    parallel_for(outer * n, std::max<int64_t>(1, 16384 / inner), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++) {
        int64_t o = r / n, j = r % n;
        std::memcpy(po + r * inner, px + (o * nx + pi[j]) * inner, inner * sizeof(T));
      }
    });
  });
  return out;
}

void index_add_(const Tensor& out, int64_t dim, const Tensor& index0, const Tensor& src) {
  check_index_dtype(index0, "index_add");
  same_device(out, src, "index_add");
  const Tensor& index = index0;  // moved to out's device below, after its check
  if (!out.is_contiguous()) fail("index_add_: out must be contiguous");
  if (index.dim() > 1) fail("index_add: index must be 1-D, got " + shape_str(index.shape()));
  int64_t d = wrap_dim(dim, out.dim(), "index_add");
  Shape expect = out.shape();
  expect[d] = index0.numel();
  if (src.shape() != expect)
    fail("index_add: src " + shape_str(src.shape()) + " expected " + shape_str(expect) + " (out " + shape_str(out.shape()) +
         " with dim " + std::to_string(d) + " = index length)");
  if (src.dtype() != out.dtype()) fail("index_add: dtypes of out and src differ");
  if (on_device(out)) {  // the device seam: one thread per (o, i), j in order; the index checked where it lives
    Tensor di = device_index(index0, out, out.size(d), "index_add", d);
    if (src.numel() > 0) require_backend(out.device(), "index_add").index_add(out, d, di, src.contiguous());
    return;
  }
  Tensor idx = index_on(index0, out).contiguous();
  check_range(idx, out.size(d), "index_add", d);
  Tensor sc = src.contiguous();
  int64_t n = idx.numel(), no = out.size(d), outer = 1, inner = 1;
  for (int64_t k = 0; k < d; k++) outer *= out.size(k);
  for (int64_t k = d + 1; k < out.dim(); k++) inner *= out.size(k);
  if (sc.numel() == 0) return;
  const int64_t ic = 1024, nchunk = (inner + ic - 1) / ic;
  dispatch_all(out.dtype(), "index_add", [&]<class T>() {
    const T* ps = sc.data<T>();
    const int64_t* pi = idx.data<int64_t>();
    T* po = out.data<T>();
    parallel_for(outer * nchunk, std::max<int64_t>(1, 16384 / (n * std::min(inner, ic))), [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; u++) {  // unit = (o, chunk of inner): race-free, see the header
        int64_t o = u / nchunk, i0 = (u % nchunk) * ic, i1 = std::min(inner, i0 + ic);
        for (int64_t j = 0; j < n; j++) {
          T* orow = po + (o * no + pi[j]) * inner;
          const T* srow = ps + (o * n + j) * inner;
          for (int64_t i = i0; i < i1; i++) orow[i] += srow[i];
        }
      }
    });
  });
}

Tensor embedding(const Tensor& weight, const Tensor& index0) {
  check_index_dtype(index0, "embedding");
  if (on_device(weight)) return device_embedding(weight, index0, "embedding");
  Tensor index = index_on(index0, weight);
  if (weight.dim() != 2) fail("embedding: weight must be (V, D), got " + shape_str(weight.shape()));
  Tensor idx = index.contiguous(), wc = weight.contiguous();
  int64_t V = weight.size(0), D = weight.size(1), N = idx.numel();
  check_range(idx, V, "embedding", 0);
  Shape s = index.shape();
  s.push_back(D);
  Tensor out = Tensor::empty(s, weight.dtype());
  if (out.numel() == 0) return out;
  dispatch_float(weight.dtype(), "embedding", [&]<class T>() {
    const T* pw = wc.data<T>();
    const int64_t* pi = idx.data<int64_t>();
    T* po = out.data<T>();
    parallel_for(N, std::max<int64_t>(1, 16384 / D), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++) std::memcpy(po + r * D, pw + pi[r] * D, D * sizeof(T));
    });
  });
  return out;
}

Tensor embedding_backward(const Tensor& dy, const Tensor& index0, int64_t V) {
  check_index_dtype(index0, "embedding_backward");
  const int64_t N = index0.numel();
  if (dy.dim() != index0.dim() + 1 || shape_numel(dy.shape()) != N * dy.size(-1))
    fail("embedding_backward: dy " + shape_str(dy.shape()) + " does not match index " + shape_str(index0.shape()) + " + [D]");
  int64_t D = dy.size(-1);
  if (on_device(dy)) {  // the device seam: sort + segmented sum (deterministic); the index checked where it lives
    Tensor di = device_index(index0, dy, V, "embedding_backward", 0);
    Tensor dw = Tensor::empty({V, D}, dy.dtype(), dy.device());
    require_backend(dy.device(), "embedding_backward").embedding_backward(dy.contiguous().view({N, D}), di.view({N}), dw);
    return dw;
  }
  Tensor idx = index_on(index0, dy).contiguous();
  check_range(idx, V, "embedding_backward", 0);
  Tensor dyc = dy.contiguous();
  Tensor dw = zeros({V, D}, dy.dtype());
  if (N == 0 || D == 0) return dw;
  dispatch_float(dy.dtype(), "embedding_backward", [&]<class T>() {
    const T* pg = dyc.data<T>();
    const int64_t* pi = idx.data<int64_t>();
    T* pw = dw.data<T>();
    // each thread owns rows [v0, v1) of dW and scans every index: no atomics, and for a fixed thread count
    // the summation order (index order) is the serial one
    int64_t grain = N * D >= 32768 ? 1 : V;
    parallel_for(V, grain, [&](int64_t v0, int64_t v1) {
      for (int64_t r = 0; r < N; r++) {
        int64_t v = pi[r];
        if (v < v0 || v >= v1) continue;
        T* w = pw + v * D;
        const T* g = pg + r * D;
        for (int64_t k = 0; k < D; k++) w[k] += g[k];
      }
    });
  });
  return dw;
}

Tensor one_hot(const Tensor& index, int64_t C, DType dtype) {
  check_index_dtype(index, "one_hot");
  Tensor idx = index.contiguous();
  Shape s = index.shape();
  s.push_back(C);
  if (on_device(index)) {  // the device seam: one thread per output element; the index checked on the device
    Tensor di = device_index(index, index, C, "one_hot", index.dim());
    Tensor out = Tensor::empty(s, dtype, index.device());
    if (out.numel() > 0) require_backend(index.device(), "one_hot").one_hot(di, out);
    return out;
  }
  check_range(idx, C, "one_hot", index.dim());
  Tensor out = zeros(s, dtype);
  dispatch_all(dtype, "one_hot", [&]<class T>() {
    const int64_t* pi = idx.data<int64_t>();
    T* po = out.data<T>();
    for (int64_t r = 0; r < idx.numel(); r++) po[r * C + pi[r]] = (T)1;
  });
  return out;
}

}  // namespace dl
