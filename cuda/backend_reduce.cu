// cuda/backend_reduce.cu - reductions on the device: sum / mean / max / min (+ index) / logsumexp / var over any dims
// (cuda/ops/reduce.cuh; contiguous row sums go to the block-per-row CUB kernel), and cumsum along one dim.
#include "cuda/backend.cuh"
#include "cuda/checks.cuh"
#include "cuda/device_ops.h"
#include "cuda/kernels.cuh"

namespace dl::cuda {

void CudaBackend::reduce(ReduceOp op, const Tensor& x, int64_t nkept, const Tensor& values, const Tensor& indices) {
  require_on_cuda(x, "reduce", "x");
  require_cuda(values, "reduce", "values");
  require_float(x, "reduce");
  int64_t kept = 1;
  for (int64_t d = 0; d < nkept; d++) kept *= x.size(d);
  if (nkept < 0 || nkept > x.dim() || values.numel() != kept || values.dtype() != x.dtype())
    fail("reduce (cuda): x " + shape_str(x.shape()) + " keeping " + std::to_string(nkept) + " dims needs values of " +
         std::to_string(kept) + " elements of " + dtype_name(x.dtype()) + ", got " + shape_str(values.shape()));
  if (indices.defined()) {
    require_cuda(indices, "reduce", "indices");
    if (indices.numel() != kept || indices.dtype() != DType::i64)
      fail("reduce (cuda): indices must be i64 with " + std::to_string(kept) + " elements");
  }
  if (op == ReduceOp::sum && nkept == x.dim() - 1 && x.is_contiguous() && x.size(-1) > 0)  // rows: the block-per-row CUB kernel
    return cuda::launch_sum_last(x.raw_data(), values.raw_data(), kept, x.size(-1), x.dtype());
  cuda::reduce(op, x, nkept, values, indices);
}

void CudaBackend::sum_last(const Tensor& x, const Tensor& out) {
  require_cuda(x, "sum_last", "x");
  require_cuda(out, "sum_last", "out");
  require_float(x, "sum_last");
  int64_t C = x.dim() == 0 ? 1 : x.size(-1), R = C == 0 ? out.numel() : x.numel() / C;
  if (out.numel() != R || out.dtype() != x.dtype())
    fail("sum_last (cuda): x " + shape_str(x.shape()) + " needs out of " + std::to_string(R) + " elements of " +
         dtype_name(x.dtype()) + ", got " + shape_str(out.shape()) + " " + dtype_name(out.dtype()));
  cuda::launch_sum_last(x.raw_data(), out.raw_data(), R, C, x.dtype());
}

void CudaBackend::cumsum(const Tensor& x, int64_t d, bool reverse, const Tensor& out) {
  require_cuda(x, "cumsum", "x");
  require_cuda(out, "cumsum", "out");
  require_same(x, out, "cumsum", "x", "out");
  if (x.dim() > 0 && (d < 0 || d >= x.dim())) fail("cumsum (cuda): dim " + std::to_string(d) + " out of range");
  cuda::cumsum(x, d, reverse, out);
}

}  // namespace dl::cuda
