// cuda/ops_elementwise.cu - the elementwise ops of cuda/ops/elementwise.cuh on the GPU (see cuda/device_ops.h).
#include <thrust/system/cuda/execution_policy.h>

#include "cuda/device_ops.h"
#include "cuda/ops/elementwise.cuh"

namespace dl::cuda {

void copy_strided(const Tensor& src, const Tensor& dst) { ops::copy_strided(thrust::cuda::par, src, dst); }
void cast(const Tensor& src, const Tensor& dst) { ops::cast(thrust::cuda::par, src, dst); }
void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) { ops::where(thrust::cuda::par, cond, a, b, out); }
void unary(UnaryOp op, const Tensor& x, const Tensor& out) { ops::unary(thrust::cuda::par, op, x, out); }
void unary_ext(ExtUnaryOp op, double alpha, const Tensor& x, const Tensor& out) {
  ops::unary_ext(thrust::cuda::par, op, alpha, x, out);
}
void unary_backward(UnaryOp op, const Tensor& xy, const Tensor& dy, const Tensor& dx) {
  ops::unary_backward(thrust::cuda::par, op, xy, dy, dx);
}
void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  ops::binary(thrust::cuda::par, ops::binary_code(op), a, b, out);
}
void binary_ext(ExtBinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  ops::binary(thrust::cuda::par, ops::binary_code(op), a, b, out);
}

}  // namespace dl::cuda
