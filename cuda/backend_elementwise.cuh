// cuda/backend_elementwise.cuh - the elementwise family of CudaBackend<P> (cuda/backend.h): where, every UnaryOp and its
// derivative, the broadcasting binary ops. Inputs are views read through their strides (cuda/ops/elementwise.cuh);
// outputs contiguous.
#pragma once
#include "cuda/backend.h"
#include "cuda/checks.h"
#include "cuda/ops/elementwise.cuh"

namespace dl::cuda {

template <class P> void CudaBackend<P>::where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  require_cuda(out, "where", "out");
  require_input(a, out, "where", "a");
  require_input(b, out, "where", "b");
  require_on_cuda(cond, "where", "cond");
  if (cond.shape() != out.shape())
    fail("where (cuda): cond " + shape_str(cond.shape()) + " must have the output's shape " + shape_str(out.shape()));
  ops::where(p_.par(), p_.view(cond), p_.view(a), p_.view(b), p_.view(out));
}

template <class P> void CudaBackend<P>::unary(UnaryOp op, const Tensor& x, const Tensor& out) {
  require_cuda(out, "unary", "out");
  require_input(x, out, "unary", "x");
  require_float(x, "unary");
  ops::unary(p_.par(), op, p_.view(x), p_.view(out));
}

template <class P> void CudaBackend<P>::unary_ext(ExtUnaryOp op, double alpha, const Tensor& x, const Tensor& out) {
  require_cuda(out, "unary_ext", "out");
  require_input(x, out, "unary_ext", "x");
  if (op != ExtUnaryOp::sign) require_float(x, "unary_ext");
  ops::unary_ext(p_.par(), op, alpha, p_.view(x), p_.view(out));
}

template <class P> void CudaBackend<P>::unary_backward(UnaryOp op, const Tensor& xy, const Tensor& dy, const Tensor& dx) {
  require_cuda(dx, "unary_backward", "dx");
  require_input(xy, dx, "unary_backward", unary_backward_uses_y(op) ? "y" : "x");
  require_input(dy, dx, "unary_backward", "dy");
  require_float(dx, "unary_backward");
  ops::unary_backward(p_.par(), op, p_.view(xy), p_.view(dy), p_.view(dx));
}

template <class P> void CudaBackend<P>::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  require_cuda(out, "binary", "out");
  require_input(a, out, "binary", "a");
  require_input(b, out, "binary", "b");
  ops::binary(p_.par(), ops::binary_code(op), p_.view(a), p_.view(b), p_.view(out));
}

template <class P> void CudaBackend<P>::binary_ext(ExtBinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  require_cuda(out, "binary", "out");
  require_input(a, out, "binary", "a");
  require_input(b, out, "binary", "b");
  ops::binary(p_.par(), ops::binary_code(op), p_.view(a), p_.view(b), p_.view(out));
}

}  // namespace dl::cuda

// The family's methods compiled for platform P, expanded inside namespace dl::cuda (cuda/gpu_elementwise.cu, cuda/twin.cpp).
#define DL_CUDA_ELEMENTWISE_FAMILY(P)                                                                 \
  template void CudaBackend<P>::where(const Tensor&, const Tensor&, const Tensor&, const Tensor&);    \
  template void CudaBackend<P>::unary(UnaryOp, const Tensor&, const Tensor&);                         \
  template void CudaBackend<P>::unary_ext(ExtUnaryOp, double, const Tensor&, const Tensor&);          \
  template void CudaBackend<P>::unary_backward(UnaryOp, const Tensor&, const Tensor&, const Tensor&); \
  template void CudaBackend<P>::binary(BinaryOp, const Tensor&, const Tensor&, const Tensor&);        \
  template void CudaBackend<P>::binary_ext(ExtBinaryOp, const Tensor&, const Tensor&, const Tensor&);
