// cuda/ops_reduce.cu - the reductions and cumsum of cuda/ops/reduce.cuh on the GPU (see cuda/device_ops.h).
#include <thrust/system/cuda/execution_policy.h>

#include "cuda/device_ops.h"
#include "cuda/ops/reduce.cuh"

namespace dl::cuda {

void reduce(ReduceOp op, const Tensor& x, int64_t nkept, const Tensor& values, const Tensor& indices) {
  ops::reduce(thrust::cuda::par, op, x, nkept, values, indices);
}
void cumsum(const Tensor& x, int64_t d, bool reverse, const Tensor& out) { ops::cumsum(thrust::cuda::par, x, d, reverse, out); }

}  // namespace dl::cuda
