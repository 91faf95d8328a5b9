// cuda/ops/gather.cuh - gather, scatter_add, index_add and one_hot on the device, as Thrust functors.
//
// Along dim d of index's shape S (gather/scatter_add) or of out (index_add), an element has coordinates
// (o, j, i): o the dims before d, j the position along d, i the dims after. tensor/indexing.cpp defines:
//   gather       out[o, j, i] = x[o, idx[o, j, i], i]                 one thread per output element
//   scatter_add  out[o, idx[o, j, i], i] += src[o, j, i]              one thread per (o, i), j in order
//   index_add    out[o, idx[j], i] += src[o, j, i]  (1-D idx)         one thread per (o, i), j in order
//   one_hot      out[r, c] = (c == idx[r])                            one thread per output element
// The adds give one (o, i) to one thread, which walks j in the CPU's order: no atomics, no two threads on one
// element (different j of one (o, i) may hit the same out element, but they are in the same thread), and the
// sums are the CPU's bit for bit. Slow when the index is long along d and narrow elsewhere (few threads): the
// case for a sort + segmented sum as embedding_backward does, if a model needs it.
// Indices are contiguous i64, already checked in range by the caller (on a host copy, tensor/indexing.cpp).
#pragma once
#include "cuda/ops/common.cuh"

namespace dl::ops {

// shape without dim d, and a stride list without dim d
inline Shape drop_dim(const Shape& s, int64_t d) {
  Shape out(s);
  out.erase(out.begin() + d);
  return out;
}

template <class T> struct GatherF {
  const T* x;
  const int64_t* idx;
  T* out;
  Strided sx;  // x's strides over index's shape, 0 on dim d (its offset comes from idx)
  int64_t xsd;
  DL_HD void operator()(int64_t e) const { out[e] = x[sx.offset(e) + idx[e] * xsd]; }
};

// x any view; idx contiguous with out's shape; out contiguous.
template <class Exec> void gather(const Exec& exec, const Tensor& x, int64_t d, const Tensor& idx, const Tensor& out) {
  Shape xs = x.strides();
  int64_t xsd = xs[d];
  xs[d] = 0;
  Strided sx = merge_dims(idx.shape(), {xs}, "gather")[0];
  dispatch_all(x.dtype(), "gather (cuda)", [&]<class T>() {
    for_n(exec, out.numel(), GatherF<T>{dptr<T>(x), dptr<int64_t>(idx), dptr<T>(out), sx, xsd});
  });
}

template <class T> struct ScatterAddF {
  T* out;
  const T* src;
  const int64_t* idx;
  Strided so, ss, si;  // out, src, idx over the (o, i) space (index's shape without d)
  int64_t n, osd, ssd, isd;
  DL_HD void operator()(int64_t e) const {
    T* po = out + so.offset(e);
    const T* ps = src + ss.offset(e);
    const int64_t* pi = idx + si.offset(e);
    for (int64_t j = 0; j < n; j++) po[pi[j * isd] * osd] += ps[j * ssd];
  }
};

// out contiguous (any shape index fits in), src any view, idx contiguous.
template <class Exec> void scatter_add(const Exec& exec, const Tensor& out, int64_t d, const Tensor& idx, const Tensor& src) {
  const Shape& is = idx.shape();
  Shape rest = drop_dim(is, d);
  std::vector<Strided> L =
      merge_dims(rest, {drop_dim(out.strides(), d), drop_dim(src.strides(), d), drop_dim(idx.strides(), d)}, "scatter_add");
  int64_t threads = shape_numel(rest);
  dispatch_all(out.dtype(), "scatter_add (cuda)", [&]<class T>() {
    for_n(exec, threads,
          ScatterAddF<T>{dptr<T>(out), dptr<T>(src), dptr<int64_t>(idx), L[0], L[1], L[2], is[d], out.strides()[d],
                         src.strides()[d], idx.strides()[d]});
  });
}

template <class T> struct IndexAddF {
  T* out;
  const T* src;
  const int64_t* idx;
  int64_t n, no, inner;
  DL_HD void operator()(int64_t e) const {
    int64_t o = e / inner, i = e % inner;
    for (int64_t j = 0; j < n; j++) out[(o * no + idx[j]) * inner + i] += src[(o * n + j) * inner + i];
  }
};

// out, src contiguous; src has out's shape with idx.numel() along d.
template <class Exec> void index_add(const Exec& exec, const Tensor& out, int64_t d, const Tensor& idx, const Tensor& src) {
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < d; k++) outer *= out.size(k);
  for (int64_t k = d + 1; k < out.dim(); k++) inner *= out.size(k);
  dispatch_all(out.dtype(), "index_add (cuda)", [&]<class T>() {
    for_n(exec, outer * inner, IndexAddF<T>{dptr<T>(out), dptr<T>(src), dptr<int64_t>(idx), idx.numel(), out.size(d), inner});
  });
}

template <class T> struct OneHotF {
  const int64_t* idx;
  T* out;
  int64_t C;
  DL_HD void operator()(int64_t e) const { out[e] = idx[e / C] == e % C ? (T)1 : (T)0; }
};

// idx contiguous (...); out contiguous (..., C).
template <class Exec> void one_hot(const Exec& exec, const Tensor& idx, const Tensor& out) {
  int64_t C = out.dim() ? out.size(-1) : 1;
  if (C == 0) return;
  dispatch_all(out.dtype(), "one_hot (cuda)", [&]<class T>() {
    for_n(exec, out.numel(), OneHotF<T>{dptr<int64_t>(idx), dptr<T>(out), C});
  });
}

}  // namespace dl::ops
