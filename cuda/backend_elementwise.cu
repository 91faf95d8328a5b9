// cuda/backend_elementwise.cu - the elementwise family on the device: where, every UnaryOp and its derivative, the
// broadcasting binary ops. Inputs are views read through their strides (cuda/ops/elementwise.cuh); outputs contiguous.
#include "cuda/backend.cuh"
#include "cuda/checks.cuh"
#include "cuda/device_ops.h"

namespace dl::cuda {

void CudaBackend::where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  require_cuda(out, "where", "out");
  require_input(a, out, "where", "a");
  require_input(b, out, "where", "b");
  require_on_cuda(cond, "where", "cond");
  if (cond.shape() != out.shape())
    fail("where (cuda): cond " + shape_str(cond.shape()) + " must have the output's shape " + shape_str(out.shape()));
  cuda::where(cond, a, b, out);
}

void CudaBackend::unary(UnaryOp op, const Tensor& x, const Tensor& out) {
  require_cuda(out, "unary", "out");
  require_input(x, out, "unary", "x");
  require_float(x, "unary");
  cuda::unary(op, x, out);
}

void CudaBackend::unary_ext(ExtUnaryOp op, double alpha, const Tensor& x, const Tensor& out) {
  require_cuda(out, "unary_ext", "out");
  require_input(x, out, "unary_ext", "x");
  if (op != ExtUnaryOp::sign) require_float(x, "unary_ext");
  cuda::unary_ext(op, alpha, x, out);
}

void CudaBackend::unary_backward(UnaryOp op, const Tensor& xy, const Tensor& dy, const Tensor& dx) {
  require_cuda(dx, "unary_backward", "dx");
  require_input(xy, dx, "unary_backward", unary_backward_uses_y(op) ? "y" : "x");
  require_input(dy, dx, "unary_backward", "dy");
  require_float(dx, "unary_backward");
  cuda::unary_backward(op, xy, dy, dx);
}

void CudaBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  require_cuda(out, "binary", "out");
  require_input(a, out, "binary", "a");
  require_input(b, out, "binary", "b");
  cuda::binary(op, a, b, out);
}

void CudaBackend::binary_ext(ExtBinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  require_cuda(out, "binary", "out");
  require_input(a, out, "binary", "a");
  require_input(b, out, "binary", "b");
  cuda::binary_ext(op, a, b, out);
}

}  // namespace dl::cuda
