// cuda/backend_index.cu - indexing on the device: embedding and its backward (sort + segmented sum), gather,
// scatter_add, index_add, one_hot (cuda/ops/index.cuh, gather.cuh). Index ranges are checked by tensor/ first.
#include "cuda/backend.cuh"
#include "cuda/checks.cuh"
#include "cuda/device_ops.h"

namespace dl::cuda {

void CudaBackend::embedding(const Tensor& weight, const Tensor& idx, const Tensor& out) {
  require_cuda(weight, "embedding", "weight");
  require_cuda(idx, "embedding", "idx");
  require_cuda(out, "embedding", "out");
  require_float(weight, "embedding");
  if (weight.dim() != 2 || idx.dtype() != DType::i64 || out.dtype() != weight.dtype() ||
      out.numel() != idx.numel() * weight.size(1))
    fail("embedding (cuda): weight " + shape_str(weight.shape()) + " (V, D), i64 idx " + shape_str(idx.shape()) + " and out " +
         shape_str(out.shape()) + " (N, D) do not fit");
  cuda::embedding(weight, idx, out);
}

void CudaBackend::embedding_backward(const Tensor& dy, const Tensor& idx, const Tensor& dw) {
  require_cuda(dy, "embedding_backward", "dy");
  require_cuda(idx, "embedding_backward", "idx");
  require_cuda(dw, "embedding_backward", "dw");
  require_float(dw, "embedding_backward");
  if (dw.dim() != 2 || idx.dtype() != DType::i64 || dy.dtype() != dw.dtype() || dy.numel() != idx.numel() * dw.size(1))
    fail("embedding_backward (cuda): dy " + shape_str(dy.shape()) + " (N, D), i64 idx " + shape_str(idx.shape()) + " and dw " +
         shape_str(dw.shape()) + " (V, D) do not fit");
  cuda::embedding_backward(dy, idx, dw);
}

// gather / scatter_add / index_add / one_hot (cuda/ops/gather.cuh); shapes and index ranges checked by tensor/
void CudaBackend::gather(const Tensor& x, int64_t d, const Tensor& idx, const Tensor& out) {
  require_on_cuda(x, "gather", "x");
  require_index(idx, "gather", x.dim(), d);
  require_cuda(out, "gather", "out");
  if (out.shape() != idx.shape() || out.dtype() != x.dtype())
    fail("gather (cuda): out " + shape_str(out.shape()) + " must have the index's shape " + shape_str(idx.shape()) +
         " and x's dtype");
  cuda::gather(x, d, idx, out);
}

void CudaBackend::scatter_add(const Tensor& out, int64_t d, const Tensor& idx, const Tensor& src) {
  require_cuda(out, "scatter_add", "out");
  require_index(idx, "scatter_add", out.dim(), d);
  require_on_cuda(src, "scatter_add", "src");
  if (src.dtype() != out.dtype() || src.dim() != idx.dim())
    fail("scatter_add (cuda): src " + shape_str(src.shape()) + " " + dtype_name(src.dtype()) + " does not fit out " +
         shape_str(out.shape()) + " " + dtype_name(out.dtype()));
  cuda::scatter_add(out, d, idx, src);
}

void CudaBackend::index_add(const Tensor& out, int64_t d, const Tensor& idx, const Tensor& src) {
  require_cuda(out, "index_add", "out");
  require_cuda(idx, "index_add", "index");
  require_cuda(src, "index_add", "src");
  if (idx.dtype() != DType::i64 || idx.dim() > 1 || d < 0 || d >= out.dim() || src.dtype() != out.dtype() ||
      src.numel() != (out.size(d) ? out.numel() / out.size(d) : 0) * idx.numel())
    fail("index_add (cuda): out " + shape_str(out.shape()) + ", 1-D i64 index " + shape_str(idx.shape()) + " and src " +
         shape_str(src.shape()) + " do not fit along dim " + std::to_string(d));
  cuda::index_add(out, d, idx, src);
}

void CudaBackend::one_hot(const Tensor& idx, const Tensor& out) {
  require_cuda(idx, "one_hot", "index");
  require_cuda(out, "one_hot", "out");
  if (idx.dtype() != DType::i64 || out.dim() != idx.dim() + 1 || out.numel() != idx.numel() * out.size(-1))
    fail("one_hot (cuda): out " + shape_str(out.shape()) + " must be the i64 index " + shape_str(idx.shape()) + " + [C]");
  cuda::one_hot(idx, out);
}

}  // namespace dl::cuda
