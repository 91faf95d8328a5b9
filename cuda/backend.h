// cuda/backend.h - CudaBackend<P>, the CUDA implementation of dl::Backend (tensor/backend.h), written once and
// compiled for two platforms P:
//
//   Gpu   (cuda/gpu.cuh)    the device: Thrust's CUDA policy, the nvcc-compiled kernels of cuda/kernels.cu,
//                           cudaMalloc and cudaMemcpy, cuBLAS, cuFFT
//   Twin  (cuda/twin.cpp)   the host twin: Thrust's C++ policy, the same kernels' formulas as host loops, host memory
//                           behind a poisoned pointer, the CPU's BLAS and FFT called with cuBLAS's and cuFFT's
//                           conventions (column-major strided batches; unnormalised transforms)
//
// Everything above the platform - the argument checks (every message names the op), the routing (a contiguous
// last-dim softmax or row sum goes to the hand-written kernel, the rest to a Thrust op of cuda/ops/), the row-major
// to column-major mapping of matmul, the FFT convolution's padding and scaling, the caching allocator - is this one
// code, so the twin runs it on every machine and in CI: tests/cuda_logic, and every OpCase's AgreesOnDevice test
// (tests/common/op_harness.h). What only a GPU tests is the platform itself: nvcc, the launches, device memory,
// cuBLAS and cuFFT (tests/cuda, tests/cuda/gpu_smoke.cpp, scripts/gpu_check.sh).
//
// A platform P has (see Gpu in cuda/gpu.cuh for the exact signatures):
//   par()                             the Thrust execution policy the ops of cuda/ops/ run with
//   use_scratch(alloc, free)          where the platform's own scratch comes from (the GPU: Thrust's temporaries,
//                                     cuBLAS's workspace, cuFFT's work areas, all from the caching allocator)
//   view(t)                           how a device operand is handed to those ops (the GPU: as it is; the twin: a
//                                     host tensor over the same bytes)
//   probe(reason), synchronize()      whether a device is there (else why not); wait for its work
//   malloc(n) (nullptr when out of memory), free(p), copy(dst, src, n, kind), memset_zero(p, n),
//   copy_rows(dst, dpitch, src, spitch, width, rows)      bytes on the device
//   fill, sum_last, softmax_last, complex_mul             the hand-written kernels (cuda/kernels.cuh)
//   gemm(t, m, n, k, a, lda, sa, b, ldb, sb, c, ldc, sc, batch)   C = A B, column-major, strided batches
//   rfft(t, n, rows, in, out), irfft(t, n, rows, in, out)         batched real FFTs of length n, unnormalised
//
// The methods are grouped by family, each family in one file of template definitions, compiled for the GPU by
// one cuda/gpu_<family>.cu (several files, so nvcc runs in parallel) and for the twin by cuda/twin.cpp:
//   cuda/backend_memory.cuh       the device, the caching allocator, copies, fill, the strided copy, the dtype cast
//   cuda/backend_elementwise.cuh  where, unary ops and their derivatives, binary ops (broadcasting views)
//   cuda/backend_reduce.cuh       reductions over any dims, row sums, cumsum; the Adam/AdamW step and the sum of squares,
//                                 per buffer or over many in one launch
//   cuda/backend_nn.cuh           softmax / log_softmax, layer_norm / rms_norm, cross-entropy (+ backward), dropout,
//                                 the LSTM cell
//   cuda/backend_index.cuh        embedding (+ backward), gather, scatter_add, index_add, one_hot
//   cuda/backend_libs.cuh         matmul (the GEMM of cuBLAS), real FFTs of rows and the causal FFT convolution (cuFFT's)
//   cuda/backend_ssm.cuh          the Vandermonde product of S4D's and DLR's kernels and the spectrum of S4's DPLR
//                                 kernel (float64), forward and backward
//   cuda/backend_attention.cuh    self-attention on the packed projection by the online softmax, forward and backward
// Each family file ends with a macro naming its methods; cuda/gpu_<family>.cu and cuda/twin.cpp expand it to compile
// the family for their platform.
//
// Streams: everything runs on the legacy default stream, so work is ordered and a block freed by one op can be handed
// to the next op at once. Adding streams would require the allocator to record an event per block.
// What it is not: multi-GPU (the current device, normally 0, is used).
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tensor/backend.h"

namespace dl::cuda {

enum class CopyKind { to_host, from_host, on_device };

// Device memory in size-class bins (cuda/backend_memory.cuh): a freed block waits in its bin for the next request of
// that size; the platform's malloc runs only on a miss. When it runs out of memory the cache is handed back and the
// request tried once more; if that fails too, the error says what was asked and what is held.
template <class P> class DeviceAllocator {
 public:
  explicit DeviceAllocator(P& platform) : p_(platform) {}
  void* alloc(size_t nbytes);
  void free(void* p, size_t nbytes);
  void empty_cache();  // every cached block back to the platform
  size_t in_use() const { return in_use_; }
  size_t cached() const { return cached_; }
  int64_t requests() const { return requests_; }  // blocks handed out since the start, from the cache or not

 private:
  P& p_;
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> bins_;
  size_t in_use_ = 0, cached_ = 0;
  std::atomic<int64_t> requests_{0};
};

template <class P> class CudaBackend final : public Backend {
 public:
  CudaBackend() : allocator_(p_) {  // the platform's library and Thrust scratch comes from the same cache as tensors
    p_.use_scratch([this](size_t n) { return allocator_.alloc(n); }, [this](void* q, size_t n) { allocator_.free(q, n); });
  }
  P& platform() { return p_; }
  DeviceAllocator<P>& allocator() { return allocator_; }

  // ---- the device, memory and copies: cuda/backend_memory.cuh ----
  std::string name() const override { return "cuda"; }
  bool available() const override;
  std::string unavailable_reason() const override;
  void synchronize() override;
  void* alloc(size_t nbytes) override;
  void free(void* p, size_t nbytes) override;
  void copy_to_host(void* dst, const void* src, size_t n) override;
  void copy_from_host(void* dst, const void* src, size_t n) override;
  void copy_on_device(void* dst, const void* src, size_t n) override;
  void fill(const Tensor& out, double value) override;
  void copy_strided(const Tensor& src, const Tensor& dst) override;
  void cast(const Tensor& src, const Tensor& dst) override;

  // ---- elementwise: cuda/backend_elementwise.cuh ----
  void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void unary(UnaryOp op, const Tensor& x, const Tensor& out) override;
  void unary_ext(ExtUnaryOp op, double alpha, const Tensor& x, const Tensor& out) override;
  void unary_backward(UnaryOp op, const Tensor& xy, const Tensor& dy, const Tensor& dx) override;
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void binary_ext(ExtBinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override;

  // ---- reductions and the optimizer: cuda/backend_reduce.cuh ----
  void reduce(ReduceOp op, const Tensor& x, int64_t nkept, const Tensor& values, const Tensor& indices) override;
  void sum_last(const Tensor& x, const Tensor& out) override;
  void cumsum(const Tensor& x, int64_t d, bool reverse, const Tensor& out) override;
  void adam_step(const AdamScalars& s, const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v) override;
  double sum_sq(const Tensor& g) override;
  void adam_steps(const AdamScalars& s, const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                  const std::vector<Tensor>& m, const std::vector<Tensor>& v) override;
  double sum_sq_all(const std::vector<Tensor>& gs) override;

  // ---- row ops of nn: softmax, norms, cross-entropy, dropout, the LSTM cell: cuda/backend_nn.cuh ----
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
  void lstm_cell(const Tensor& gates, const Tensor& c, const Tensor& hc) override;
  void lstm_cell_backward(const Tensor& gates, const Tensor& c, const Tensor& dhc, const Tensor& dgates,
                          const Tensor& dc) override;

  // ---- indexing: cuda/backend_index.cuh ----
  void embedding(const Tensor& weight, const Tensor& idx, const Tensor& out) override;
  void embedding_backward(const Tensor& dy, const Tensor& idx, const Tensor& dw) override;
  void gather(const Tensor& x, int64_t d, const Tensor& idx, const Tensor& out) override;
  void scatter_add(const Tensor& out, int64_t d, const Tensor& idx, const Tensor& src) override;
  void index_add(const Tensor& out, int64_t d, const Tensor& idx, const Tensor& src) override;
  void one_hot(const Tensor& idx, const Tensor& out) override;

  // ---- the libraries: matmul (cuBLAS's GEMM), the FFTs (cuFFT's transforms): cuda/backend_libs.cuh ----
  void matmul(const Tensor& a, const Tensor& b, const Tensor& out) override;
  void fft_conv(const Tensor& a, const Tensor& b, const Tensor& out) override;
  void rfft_rows(const Tensor& x, const Tensor& X) override;
  void irfft_rows(const Tensor& X, const Tensor& x) override;

  // ---- state-space kernels: the Vandermonde product of S4D and DLR, S4's DPLR spectrum: cuda/backend_ssm.cuh ----
  void vandermonde(const Tensor& Ct, const Tensor& E, double scale, const Tensor& K) override;
  void vandermonde_backward(const Tensor& Ct, const Tensor& E, const Tensor& dK, double scale, const Tensor& gCt,
                            const Tensor& gE) override;
  void dplr_spectrum(const Tensor& w, const Tensor& dt, const Tensor& V, int64_t Lk, const Tensor& Khat) override;
  void dplr_spectrum_backward(const Tensor& w, const Tensor& dt, const Tensor& V, int64_t Lk, const Tensor& gKhat,
                              const Tensor& gV, const Tensor& gw, const Tensor& gdt) override;

  // ---- self-attention on the packed projection, by the online softmax: cuda/backend_attention.cuh ----
  void attention(const AttentionArgs& a, const Tensor& qkv, const Tensor& key_mask, const Tensor& prefix, const Tensor& out,
                 const Tensor& L) override;
  void attention_backward(const AttentionArgs& a, const Tensor& qkv, const Tensor& key_mask, const Tensor& prefix,
                          const Tensor& out, const Tensor& L, const Tensor& dout, const Tensor& dqkv) override;

 private:
  // the platform's real FFTs of `rows` rows, handed over in power-of-two batches (cuda/backend_libs.cuh)
  void platform_rfft(DType t, int64_t n, int64_t rows, const void* in, void* out);
  void platform_irfft(DType t, int64_t n, int64_t rows, const void* in, void* out);

  mutable P p_;  // probe() caches its answer
  DeviceAllocator<P> allocator_;
};

}  // namespace dl::cuda
