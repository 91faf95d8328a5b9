// cuda/backend_index.cuh - indexing in CudaBackend<P> (cuda/backend.h): embedding and its backward (sort + segmented
// sum), gather, scatter_add, index_add, one_hot (cuda/ops/index.cuh, gather.cuh). Index ranges are checked by tensor/
// first.
#pragma once
#include "cuda/backend.h"
#include "cuda/checks.h"
#include "cuda/ops/gather.cuh"
#include "cuda/ops/index.cuh"

namespace dl::cuda {

template <class P> void CudaBackend<P>::embedding(const Tensor& weight, const Tensor& idx, const Tensor& out) {
  require_cuda(weight, "embedding", "weight");
  require_cuda(idx, "embedding", "idx");
  require_cuda(out, "embedding", "out");
  require_float(weight, "embedding");
  if (weight.dim() != 2 || idx.dtype() != DType::i64 || out.dtype() != weight.dtype() ||
      out.numel() != idx.numel() * weight.size(1))
    fail("embedding (cuda): weight " + shape_str(weight.shape()) + " (V, D), i64 idx " + shape_str(idx.shape()) + " and out " +
         shape_str(out.shape()) + " (N, D) do not fit");
  ops::embedding(p_.par(), p_.view(weight), p_.view(idx), p_.view(out));
}

template <class P> void CudaBackend<P>::embedding_backward(const Tensor& dy, const Tensor& idx, const Tensor& dw) {
  require_cuda(dy, "embedding_backward", "dy");
  require_cuda(idx, "embedding_backward", "idx");
  require_cuda(dw, "embedding_backward", "dw");
  require_float(dw, "embedding_backward");
  if (dw.dim() != 2 || idx.dtype() != DType::i64 || dy.dtype() != dw.dtype() || dy.numel() != idx.numel() * dw.size(1))
    fail("embedding_backward (cuda): dy " + shape_str(dy.shape()) + " (N, D), i64 idx " + shape_str(idx.shape()) + " and dw " +
         shape_str(dw.shape()) + " (V, D) do not fit");
  ops::embedding_backward(p_.par(), p_.view(dy), p_.view(idx), p_.view(dw));
}

// gather / scatter_add / index_add / one_hot (cuda/ops/gather.cuh); shapes and index ranges checked by tensor/
template <class P> void CudaBackend<P>::gather(const Tensor& x, int64_t d, const Tensor& idx, const Tensor& out) {
  require_on_cuda(x, "gather", "x");
  require_index(idx, "gather", x.dim(), d);
  require_cuda(out, "gather", "out");
  if (out.shape() != idx.shape() || out.dtype() != x.dtype())
    fail("gather (cuda): out " + shape_str(out.shape()) + " must have the index's shape " + shape_str(idx.shape()) +
         " and x's dtype");
  ops::gather(p_.par(), p_.view(x), d, p_.view(idx), p_.view(out));
}

template <class P> void CudaBackend<P>::scatter_add(const Tensor& out, int64_t d, const Tensor& idx, const Tensor& src) {
  require_cuda(out, "scatter_add", "out");
  require_index(idx, "scatter_add", out.dim(), d);
  require_on_cuda(src, "scatter_add", "src");
  if (src.dtype() != out.dtype() || src.dim() != idx.dim())
    fail("scatter_add (cuda): src " + shape_str(src.shape()) + " " + dtype_name(src.dtype()) + " does not fit out " +
         shape_str(out.shape()) + " " + dtype_name(out.dtype()));
  ops::scatter_add(p_.par(), p_.view(out), d, p_.view(idx), p_.view(src));
}

template <class P> void CudaBackend<P>::index_add(const Tensor& out, int64_t d, const Tensor& idx, const Tensor& src) {
  require_cuda(out, "index_add", "out");
  require_cuda(idx, "index_add", "index");
  require_cuda(src, "index_add", "src");
  if (idx.dtype() != DType::i64 || idx.dim() > 1 || d < 0 || d >= out.dim() || src.dtype() != out.dtype() ||
      src.numel() != (out.size(d) ? out.numel() / out.size(d) : 0) * idx.numel())
    fail("index_add (cuda): out " + shape_str(out.shape()) + ", 1-D i64 index " + shape_str(idx.shape()) + " and src " +
         shape_str(src.shape()) + " do not fit along dim " + std::to_string(d));
  ops::index_add(p_.par(), p_.view(out), d, p_.view(idx), p_.view(src));
}

template <class P> void CudaBackend<P>::one_hot(const Tensor& idx, const Tensor& out) {
  require_cuda(idx, "one_hot", "index");
  require_cuda(out, "one_hot", "out");
  if (idx.dtype() != DType::i64 || out.dim() != idx.dim() + 1 || out.numel() != idx.numel() * out.size(-1))
    fail("one_hot (cuda): out " + shape_str(out.shape()) + " must be the i64 index " + shape_str(idx.shape()) + " + [C]");
  ops::one_hot(p_.par(), p_.view(idx), p_.view(out));
}

}  // namespace dl::cuda

// The family's methods compiled for platform P, expanded inside namespace dl::cuda (cuda/gpu_index.cu, cuda/twin.cpp).
#define DL_CUDA_INDEX_FAMILY(P)                                                                    \
  template void CudaBackend<P>::embedding(const Tensor&, const Tensor&, const Tensor&);            \
  template void CudaBackend<P>::embedding_backward(const Tensor&, const Tensor&, const Tensor&);   \
  template void CudaBackend<P>::gather(const Tensor&, int64_t, const Tensor&, const Tensor&);      \
  template void CudaBackend<P>::scatter_add(const Tensor&, int64_t, const Tensor&, const Tensor&); \
  template void CudaBackend<P>::index_add(const Tensor&, int64_t, const Tensor&, const Tensor&);   \
  template void CudaBackend<P>::one_hot(const Tensor&, const Tensor&);
