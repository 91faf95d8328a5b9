// cuda/check.cuh - turn every CUDA, cuBLAS and cuFFT status into a std::runtime_error.
//
// The message names the call as written, file:line and the library's error string, e.g.
//   "CUDA error: cudaMalloc(&p, b) at cuda/backend_memory.cu:42: out of memory (cudaErrorMemoryAllocation)".
// Kernel launches are checked with DL_CUDA_CHECK_LAUNCH() right after the <<<...>>>, which catches bad
// launch configurations; faults inside a kernel surface at the next synchronising call (a copy), as
// always with CUDA. What it is not: a retry policy; the out-of-memory retry lives in the allocator.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>

#include <stdexcept>
#include <string>

namespace dl::cuda {

inline const char* cufft_error_string(cufftResult r) {
  switch (r) {
    case CUFFT_SUCCESS: return "CUFFT_SUCCESS";
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED (out of device memory)";
    case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_UNALIGNED_DATA: return "CUFFT_UNALIGNED_DATA";
    case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    default: return "unknown cufftResult";
  }
}

[[noreturn]] inline void throw_error(const char* lib, const char* call, const char* file, int line, const std::string& what) {
  throw std::runtime_error(std::string(lib) + " error: " + call + " at " + file + ":" + std::to_string(line) + ": " + what);
}

inline void check(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so the next call does not report it again
  throw_error("CUDA", call, file, line, std::string(cudaGetErrorString(e)) + " (" + cudaGetErrorName(e) + ")");
}
inline void check(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw_error("cuBLAS", call, file, line, std::string(cublasGetStatusString(s)) + " (" + cublasGetStatusName(s) + ")");
}
inline void check(cufftResult r, const char* call, const char* file, int line) {
  if (r == CUFFT_SUCCESS) return;
  throw_error("cuFFT", call, file, line, cufft_error_string(r));
}

}  // namespace dl::cuda

// One macro for all three libraries: overloads on the status type pick the error string.
#define DL_CUDA_CHECK(call) ::dl::cuda::check((call), #call, __FILE__, __LINE__)
#define DL_CUDA_CHECK_LAUNCH() ::dl::cuda::check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
