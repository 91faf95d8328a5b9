// tensor/backend.h - the one device seam.
//
// Every op in tensor/ops.h runs its CPU kernel for CPU tensors; for a tensor on another device it asks
// device_backend(device) and calls the same-named method there. The CUDA backend (cuda/) implements this
// interface; a build without nvcc links cuda/backend_stub.cpp, whose device_backend() returns nullptr so a
// CUDA tensor fails with "built without CUDA". No #ifdef anywhere else.
// What it is not: a full second implementation of every op. Ops a backend lacks throw, naming the op.
#pragma once
#include <cstddef>
#include <string>

#include "tensor/tensor.h"

namespace dl {

enum class UnaryOp { neg, exp, log, sqrt, rsqrt, abs, tanh, sigmoid, relu, gelu_erf, gelu_tanh, silu, softplus };
enum class BinaryOp { add, sub, mul, div };

struct Backend {
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual bool available() const = 0;  // a device is present
  // memory
  virtual void* alloc(size_t nbytes) = 0;
  virtual void free(void* p, size_t nbytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, size_t nbytes) = 0;
  virtual void copy_from_host(void* dst, const void* src, size_t nbytes) = 0;
  virtual void copy_on_device(void* dst, const void* src, size_t nbytes) = 0;
  // kernels on contiguous f32 tensors of equal shape (the caller makes inputs contiguous/expanded)
  virtual void fill(const Tensor& out, double value) = 0;
  virtual void unary(UnaryOp op, const Tensor& x, const Tensor& out) = 0;
  virtual void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  // out(B, M, N) = a(B, M, K) @ b(B, K, N), contiguous f32 (cuBLAS strided-batched sgemm)
  virtual void matmul(const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  // sum over the last dim: x(R, C) -> out(R)
  virtual void sum_last(const Tensor& x, const Tensor& out) = 0;
  // softmax over the last dim: x(R, C) -> out(R, C)
  virtual void softmax_last(const Tensor& x, const Tensor& out) = 0;
  // out = irfft(rfft(a, n) * rfft(b, n), n)[:L] per row: a(R, L), b(R, L), out(R, L) (cuFFT)
  virtual void fft_conv(const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  virtual void synchronize() = 0;
};

Backend* device_backend(Device d);                   // nullptr when that device is not built in (cuda/backend_*.{cu,cpp})
Backend& require_backend(Device d, const char* op);  // throws naming op when missing or no device

}  // namespace dl
