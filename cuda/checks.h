// cuda/checks.h - the argument checks of CudaBackend's methods (cuda/backend.h). Every message names the op and
// the operand, as tensor/ does: "softmax (cuda): x [4, 5] must have the output's shape [4, 6]".
#pragma once
#include <climits>
#include <string>

#include "tensor/tensor.h"

namespace dl::cuda {

// On this device, any strides.
inline void require_on_cuda(const Tensor& t, const char* op, const char* what) {
  if (!t.defined()) fail(std::string(op) + " (cuda): " + what + " is undefined");
  if (t.device() != Device::cuda) fail(std::string(op) + " (cuda): " + what + " is on " + device_name(t.device()));
}

// On this device and contiguous.
inline void require_cuda(const Tensor& t, const char* op, const char* what) {
  require_on_cuda(t, op, what);
  if (!t.is_contiguous()) fail(std::string(op) + " (cuda): " + what + " " + shape_str(t.shape()) + " must be contiguous");
}

// An input view read with out's shape and dtype (elementwise ops).
inline void require_input(const Tensor& x, const Tensor& out, const char* op, const char* what) {
  require_on_cuda(x, op, what);
  if (x.shape() != out.shape())
    fail(std::string(op) + " (cuda): " + what + " " + shape_str(x.shape()) + " must have the output's shape " +
         shape_str(out.shape()));
  if (x.dtype() != out.dtype())
    fail(std::string(op) + " (cuda): " + what + " is " + dtype_name(x.dtype()) + ", the output " + dtype_name(out.dtype()));
}

inline void require_same(const Tensor& a, const Tensor& b, const char* op, const char* wa, const char* wb) {
  if (a.numel() != b.numel())
    fail(std::string(op) + " (cuda): " + wa + " " + shape_str(a.shape()) + " and " + wb + " " + shape_str(b.shape()) +
         " differ in size");
  if (a.dtype() != b.dtype())
    fail(std::string(op) + " (cuda): " + wa + " is " + dtype_name(a.dtype()) + ", " + wb + " is " + dtype_name(b.dtype()));
}

// One value per row of x (every dim but the last), contiguous, x's dtype.
inline void require_rows(const Tensor& x, const Tensor& r, const char* op, const char* what) {
  require_cuda(r, op, what);
  int64_t C = x.dim() == 0 ? 1 : x.size(-1), R = C == 0 ? r.numel() : x.numel() / C;
  if (r.numel() != R || r.dtype() != x.dtype())
    fail(std::string(op) + " (cuda): " + what + " needs " + std::to_string(R) + " elements of " + dtype_name(x.dtype()) +
         ", got " + shape_str(r.shape()) + " " + dtype_name(r.dtype()));
}

// A [C] parameter of x's last dim, contiguous, x's dtype.
inline void require_channels(const Tensor& x, const Tensor& p, const char* op, const char* what) {
  require_cuda(p, op, what);
  if (x.dim() < 1 || p.shape() != Shape{x.size(-1)} || p.dtype() != x.dtype())
    fail(std::string(op) + " (cuda): " + what + " " + shape_str(p.shape()) + " " + dtype_name(p.dtype()) +
         " must be [C] of the input " + shape_str(x.shape()) + " " + dtype_name(x.dtype()));
}

// Class indices: contiguous i64, one per row of logits (..., C).
inline void require_target(const Tensor& logits, const Tensor& t, const char* op) {
  require_cuda(t, op, "target");
  Shape want(logits.shape().begin(), logits.shape().end() - (logits.dim() ? 1 : 0));
  if (t.shape() != want || t.dtype() != DType::i64)
    fail(std::string(op) + " (cuda): target " + shape_str(t.shape()) + " " + dtype_name(t.dtype()) + " must be i64 " +
         shape_str(want));
}

// An index for gather / scatter_add: contiguous i64 of the operand's rank, d a dim of it.
inline void require_index(const Tensor& idx, const char* op, int64_t rank, int64_t d) {
  require_cuda(idx, op, "index");
  if (idx.dtype() != DType::i64 || idx.dim() != rank || d < 0 || d >= rank)
    fail(std::string(op) + " (cuda): index " + shape_str(idx.shape()) + " " + dtype_name(idx.dtype()) + " must be i64 of rank " +
         std::to_string(rank) + ", dim " + std::to_string(d));
}

inline void require_float(const Tensor& t, const char* op) {
  if (t.dtype() != DType::f32 && t.dtype() != DType::f64)
    fail(std::string(op) + " (cuda): expected f32 or f64, found " + dtype_name(t.dtype()));
}

// Rows of n reals x (R, n) and their spectra X (R, n/2 + 1, 2), both contiguous, one float dtype (rfft / irfft).
inline void require_spectrum_rows(const Tensor& x, const Tensor& X, const char* op) {
  require_cuda(x, op, "x");
  require_cuda(X, op, "X");
  require_float(x, op);
  if (x.dim() != 2 || X.shape() != Shape{x.size(0), x.size(1) / 2 + 1, 2} || X.dtype() != x.dtype())
    fail(std::string(op) + " (cuda): x (R, n) " + shape_str(x.shape()) + " needs X (R, n/2 + 1, 2) of its dtype, got " +
         shape_str(X.shape()));
}

inline int to_int(int64_t v, const char* op, const char* what) {
  if (v > INT_MAX)
    fail(std::string(op) + " (cuda): " + what + " = " + std::to_string(v) + " exceeds the int range of the library");
  return (int)v;
}

}  // namespace dl::cuda
