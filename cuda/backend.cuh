// cuda/backend.cuh - CudaBackend, the CUDA implementation of dl::Backend (tensor/backend.h), and its caching
// allocator. One class, defined over several files, one per op family:
//
//   cuda/backend.cu              the device: available(), synchronize(), device_backend() (the seam tensor/ calls)
//   cuda/backend_memory.cu       the caching allocator, host <-> device copies, fill, strided copy, dtype cast
//   cuda/backend_elementwise.cu  where, unary ops and their derivatives, binary ops (broadcasting views)
//   cuda/backend_reduce.cu       reductions over any dims, row sums, cumsum
//   cuda/backend_nn.cu           softmax / log_softmax, layer_norm / rms_norm, cross-entropy (+ backward), dropout
//   cuda/backend_index.cu        embedding (+ backward), gather, scatter_add, index_add, one_hot
//   cuda/backend_optim.cu        the fused Adam/AdamW step, the sum of squares of the global norm
//   cuda/backend_blas.cu         matmul on cuBLAS
//   cuda/backend_fft.cu          the causal FFT convolution on cuFFT
//
// Each method checks its arguments (cuda/checks.cuh: every message names the op) and then calls a hand-written
// kernel (cuda/kernels.cuh), a Thrust op of cuda/ops/ (cuda/device_ops.h), cuBLAS or cuFFT.
//
// Memory: a caching allocator with size-class bins (the same rounding idea as tensor/allocator.cpp).
// cudaMalloc runs only on a miss and synchronises the device, so a training step that frees and
// re-allocates its activations must find them in the cache; freed blocks are kept until process exit
// (or until a cudaMalloc fails, when the cache is released and the call retried once). Plain cudaMalloc,
// never managed memory.
// Streams: everything runs on the legacy default stream, so work is ordered and a block freed by one op
// can be handed to the next op at once. Adding streams would require the allocator to record an event
// per block; that is deliberately not done yet.
// What it is not: multi-GPU (the current device, normally 0, is used).
#pragma once
#include <cublas_v2.h>
#include <cufft.h>

#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "tensor/backend.h"

namespace dl::cuda {

// Device memory in size-class bins (backend_memory.cu): a freed block waits in its bin for the next request of
// that size.
class DeviceAllocator {
 public:
  void* alloc(size_t nbytes);
  void free(void* p, size_t nbytes);
  void empty_cache();  // every cached block back to the driver

 private:
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> bins_;
  size_t in_use_ = 0, cached_ = 0;
};

class CudaBackend final : public Backend {
 public:
  // ---- the device: cuda/backend.cu ----
  std::string name() const override;
  bool available() const override;
  std::string unavailable_reason() const override;
  void synchronize() override;

  // ---- memory and copies: cuda/backend_memory.cu ----
  void* alloc(size_t nbytes) override;
  void free(void* p, size_t nbytes) override;
  void copy_to_host(void* dst, const void* src, size_t n) override;
  void copy_from_host(void* dst, const void* src, size_t n) override;
  void copy_on_device(void* dst, const void* src, size_t n) override;
  void fill(const Tensor& out, double value) override;
  void copy_strided(const Tensor& src, const Tensor& dst) override;
  void cast(const Tensor& src, const Tensor& dst) override;

  // ---- elementwise: cuda/backend_elementwise.cu ----
  void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void unary(UnaryOp op, const Tensor& x, const Tensor& out) override;
  void unary_ext(ExtUnaryOp op, double alpha, const Tensor& x, const Tensor& out) override;
  void unary_backward(UnaryOp op, const Tensor& xy, const Tensor& dy, const Tensor& dx) override;
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void binary_ext(ExtBinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override;

  // ---- reductions: cuda/backend_reduce.cu ----
  void reduce(ReduceOp op, const Tensor& x, int64_t nkept, const Tensor& values, const Tensor& indices) override;
  void sum_last(const Tensor& x, const Tensor& out) override;
  void cumsum(const Tensor& x, int64_t d, bool reverse, const Tensor& out) override;

  // ---- row ops of nn: softmax, norms, cross-entropy, dropout: cuda/backend_nn.cu ----
  void softmax(const Tensor& x, int64_t dim, bool log, const Tensor& y) override;
  void softmax_backward(const Tensor& y, const Tensor& dy, int64_t dim, bool log, const Tensor& dx) override;
  void softmax_last(const Tensor& x, const Tensor& out) override;
  void layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Tensor& y, const Tensor& mean,
                  const Tensor& rstd) override;
  void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& w,
                           const Tensor& dx, const Tensor& dw, const Tensor& db) override;
  void cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index, double ls, const Tensor& rowloss,
                     const Tensor& lse, const Tensor& valid) override;
  void cross_entropy_backward(const Tensor& logits, const Tensor& target, const Tensor& lse, int64_t ignore_index, double ls,
                              const Tensor& row_scale, const Tensor& dx) override;
  void dropout_mask(uint64_t base, double p, const Tensor& mask) override;

  // ---- indexing: cuda/backend_index.cu ----
  void embedding(const Tensor& weight, const Tensor& idx, const Tensor& out) override;
  void embedding_backward(const Tensor& dy, const Tensor& idx, const Tensor& dw) override;
  void gather(const Tensor& x, int64_t d, const Tensor& idx, const Tensor& out) override;
  void scatter_add(const Tensor& out, int64_t d, const Tensor& idx, const Tensor& src) override;
  void index_add(const Tensor& out, int64_t d, const Tensor& idx, const Tensor& src) override;
  void one_hot(const Tensor& idx, const Tensor& out) override;

  // ---- optimizer: cuda/backend_optim.cu ----
  void adam_step(const AdamScalars& s, const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v) override;
  double sum_sq(const Tensor& g) override;

  // ---- matmul (cuBLAS): cuda/backend_blas.cu ----
  void matmul(const Tensor& a, const Tensor& b, const Tensor& out) override;

  // ---- FFT convolution (cuFFT): cuda/backend_fft.cu ----
  void fft_conv(const Tensor& a, const Tensor& b, const Tensor& out) override;

 private:
  struct FftPlans {
    cufftHandle forward = 0, inverse = 0;
  };
  cublasHandle_t blas_handle();                                  // backend_blas.cu
  const FftPlans& fft_plans(int64_t n, int64_t batch, DType t);  // backend_fft.cu

  DeviceAllocator allocator_;
  mutable std::once_flag available_once_;
  mutable bool available_ = false;
  mutable std::string reason_;
  std::mutex blas_mu_, fft_mu_;
  cublasHandle_t blas_ = nullptr;
  std::map<std::tuple<int64_t, int64_t, DType>, FftPlans> plans_;
};

}  // namespace dl::cuda
