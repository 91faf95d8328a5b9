// cuda/gpu.cuh - Gpu, the platform of CudaBackend<Gpu> (cuda/backend.h): what only the GPU does. The Thrust ops run
// with thrust::cuda::par_nosync (kernels on the legacy default stream, in order with cudaMemcpy, cuBLAS and cuFFT, and
// queued like any kernel launch: the host does not wait for each one), operands
// are handed to them as they are (their raw pointers are device pointers), memory is cudaMalloc'd, the hand-written
// kernels are launched (cuda/kernels.cu), GEMMs and FFTs go to cuBLAS and cuFFT. Its methods: cuda/gpu.cu.
// Compiled by nvcc only; the twin of this struct, for the host, is Twin in cuda/twin.cpp.
#pragma once
#include <thrust/system/cuda/execution_policy.h>

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "cuda/backend.h"
#include "cuda/kernels.cuh"

namespace dl::cuda {

struct Gpu {
  // Thrust's temporaries (sort, reduce_by_key, the reductions' partials) come from the backend's caching allocator, as
  // tensors do: no cudaMalloc / cudaFree (which synchronises the device) per algorithm.
  // par_nosync, not par: thrust::cuda::par waits for the device at the end of every algorithm (cudaStreamSynchronize),
  // so the host spun through each op (the first GPU run, 2026-12-05: CPU time per step equal to its wall time) and the
  // GPU idled between launches. Nothing here needs that wait: every op, copy and library call is on the one legacy
  // stream, so a result is ready for whatever is queued after it, a temporary handed back to the cache is reused only
  // by later work on that stream, a copy to the host (cudaMemcpy) waits for the work before it, and NCCL's stream waits
  // on an event recorded on this one (apps/common/backends/comm_nccl.cpp). An algorithm that returns a value to the
  // host (a reduce, a count) still waits, as it must. A kernel's error is then reported by a later call.
  auto par() const { return thrust::cuda::par_nosync(thrust_scratch_); }
  const Tensor& view(const Tensor& t) const { return t; }

  // Device scratch for Thrust, cuBLAS's workspace and cuFFT's work areas: the backend's caching allocator, set once by
  // CudaBackend's constructor (so the cache can hand its free blocks back before any of them fails for memory).
  void use_scratch(std::function<void*(size_t)> alloc, std::function<void(void*, size_t)> free) {
    scratch_alloc_ = std::move(alloc), scratch_free_ = std::move(free);
  }

  bool probe(std::string& reason);  // cudaGetDeviceCount, asked once: no device or no driver is false, never an abort
  void synchronize();

  void* malloc(size_t n);  // cudaMalloc; nullptr when the device is out of memory, an error naming the call otherwise
  void free(void* p);
  void copy(void* dst, const void* src, size_t n, CopyKind kind);
  void memset_zero(void* p, size_t n);
  void copy_rows(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t rows);  // cudaMemcpy2D

  void fill(void* out, int64_t n, DType t, double v) { launch_fill(out, n, t, v); }
  void sum_last(const void* x, void* out, int64_t rows, int64_t cols, DType t) { launch_sum_last(x, out, rows, cols, t); }
  void softmax_last(const void* x, void* out, int64_t rows, int64_t cols, DType t) { launch_softmax_last(x, out, rows, cols, t); }
  void complex_mul(void* a, const void* b, int64_t n, double scale, DType t) { launch_complex_mul(a, b, n, scale, t); }

  // C = A B, column-major (m x k times k x n), `batch` products at element strides sa, sb, sc (0: shared), f32 or f64:
  // cublas{S,D}gemmStridedBatched with no transposes, alpha 1, beta 0, in cuBLAS's default math mode (true FP32).
  void gemm(DType t, int m, int n, int k, const void* a, int lda, int64_t sa, const void* b, int ldb, int64_t sb, void* c,
            int ldc, int64_t sc, int batch);
  // `rows` real rows of n -> rows of n/2 + 1 complex numbers (interleaved re, im), and back; unnormalised (cuFFT's R2C /
  // C2R, D2Z / Z2D), plans cached per (n, rows, dtype).
  void rfft(DType t, int64_t n, int64_t rows, const void* in, void* out);
  void irfft(DType t, int64_t n, int64_t rows, const void* in, void* out);

 private:
  struct FftPlans {
    int forward = 0, inverse = 0;  // cufftHandle
    void* work = nullptr;          // one work area for both (they never run at once), from the scratch allocator
    size_t work_bytes = 0;
  };
  void* scratch(size_t n) const { return scratch_alloc_ ? scratch_alloc_(n) : nullptr; }
  void unscratch(void* p, size_t n) const {
    if (scratch_free_) scratch_free_(p, n);
  }
  struct ThrustScratch {  // the allocator thrust::cuda::par_nosync(a) asks for its temporaries
    using value_type = char;
    const Gpu* gpu;
    // at least one byte: the cache hands out no block (nullptr) for 0, which Thrust would take for a failure
    char* allocate(std::ptrdiff_t n) { return (char*)gpu->scratch(n > 0 ? (size_t)n : 1); }
    void deallocate(char* p, size_t n) { gpu->unscratch(p, n > 0 ? n : 1); }
  };
  std::function<void*(size_t)> scratch_alloc_;
  std::function<void(void*, size_t)> scratch_free_;
  mutable ThrustScratch thrust_scratch_{this};
  static constexpr size_t kBlasWorkspace = size_t(32) << 20;  // cuBLAS's advice for Hopper: 32 MiB per handle
  const FftPlans& fft_plans(int64_t n, int64_t rows, DType t);

  std::once_flag probed_;
  bool available_ = false;
  std::string reason_;
  std::mutex blas_mu_, fft_mu_;
  void* blas_ = nullptr;  // cublasHandle_t, created on first use
  std::map<std::tuple<int64_t, int64_t, DType>, FftPlans> plans_;
};

}  // namespace dl::cuda
