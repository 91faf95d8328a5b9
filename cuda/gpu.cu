// cuda/gpu.cu - the methods of Gpu (cuda/gpu.cuh): the device, its memory, cuBLAS's GEMM and cuFFT's transforms; the
// library family of CudaBackend<Gpu> (cuda/backend_libs.cuh); and cuda_backend(), the GPU backend tensor/backend.h
// finds for Device::cuda. The other families are compiled for the GPU in cuda/gpu_{elementwise,reduce,nn,index}.cu.
#include <cublas_v2.h>
#include <cufft.h>

#include "cuda/backend_libs.cuh"
#include "cuda/check.cuh"
#include "cuda/gpu.cuh"
#include "tensor/bf16.h"  // matmul_precision

namespace dl::cuda {

bool Gpu::probe(std::string& reason) {
  std::call_once(probed_, [this] {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) cudaGetLastError();  // cudaErrorNoDevice, cudaErrorInsufficientDriver, ...
    available_ = e == cudaSuccess && n >= 1;
    if (e != cudaSuccess) reason_ = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    else if (n < 1) reason_ = "cudaGetDeviceCount: 0 devices";
  });
  reason = reason_;
  return available_;
}

void Gpu::synchronize() { DL_CUDA_CHECK(cudaDeviceSynchronize()); }

void* Gpu::malloc(size_t n) {
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, n);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it, the allocator decides what to do
    return nullptr;
  }
  DL_CUDA_CHECK(e);
  return p;
}

void Gpu::free(void* p) { cudaFree(p); }  // errors ignored: the caller may be recovering from one

void Gpu::copy(void* dst, const void* src, size_t n, CopyKind kind) {
  cudaMemcpyKind k = kind == CopyKind::to_host     ? cudaMemcpyDeviceToHost
                     : kind == CopyKind::from_host ? cudaMemcpyHostToDevice
                                                   : cudaMemcpyDeviceToDevice;
  DL_CUDA_CHECK(cudaMemcpy(dst, src, n, k));
}

void Gpu::memset_zero(void* p, size_t n) { DL_CUDA_CHECK(cudaMemsetAsync(p, 0, n)); }

void Gpu::copy_rows(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t rows) {
  DL_CUDA_CHECK(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, cudaMemcpyDeviceToDevice));
}

void Gpu::gemm(DType t, int m, int n, int k, const void* a, int lda, int64_t sa, const void* b, int ldb, int64_t sb, void* c,
               int ldc, int64_t sc, int batch) {
  std::lock_guard<std::mutex> lock(blas_mu_);
  if (!blas_) {
    DL_CUDA_CHECK(cublasCreate((cublasHandle_t*)&blas_));  // default math mode: true FP32, no TF32
    // its workspace from the cache (held for the process): cuBLAS would otherwise cudaMalloc its own
    if (void* ws = scratch(kBlasWorkspace)) DL_CUDA_CHECK(cublasSetWorkspace((cublasHandle_t)blas_, ws, kBlasWorkspace));
  }
  cublasHandle_t h = (cublasHandle_t)blas_;
  if (t == DType::f32 && matmul_precision() == Precision::bf16) {
    // --precision bf16: cuBLAS rounds the float32 operands to bf16 itself and sums in float32 on the tensor cores
    // (CUBLAS_COMPUTE_32F_FAST_16BF), the GPU twin of tensor/bf16_gemm.h; no bf16 copy of A or B is made here.
    const float one = 1, zero = 0;
    DL_CUDA_CHECK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a, CUDA_R_32F, lda, sa, b, CUDA_R_32F,
                                             ldb, sb, &zero, c, CUDA_R_32F, ldc, sc, batch, CUBLAS_COMPUTE_32F_FAST_16BF,
                                             CUBLAS_GEMM_DEFAULT));
  } else if (t == DType::f32) {
    const float one = 1, zero = 0;
    DL_CUDA_CHECK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, (const float*)a, lda, sa, (const float*)b,
                                            ldb, sb, &zero, (float*)c, ldc, sc, batch));
  } else if (t == DType::f64) {
    const double one = 1, zero = 0;
    DL_CUDA_CHECK(cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, (const double*)a, lda, sa,
                                            (const double*)b, ldb, sb, &zero, (double*)c, ldc, sc, batch));
  } else {
    fail(std::string("matmul (cuda): expected f32 or f64, found ") + dtype_name(t));
  }
}

// Plans are cached per (n, rows, dtype): creating one costs far more than executing it. The backend hands rows over in
// power-of-two batches (cuda/backend_libs.cuh's in_fft_batches), so a length has at most 17 plans; a run with many
// distinct lengths would still pile them up, so past kMaxPlans we start over. Work areas come from the scratch
// allocator (auto-allocation off): cuFFT never cudaMallocs behind the cache's back, and they go back to the cache
// with their plans.
const Gpu::FftPlans& Gpu::fft_plans(int64_t n, int64_t rows, DType t) {
  constexpr size_t kMaxPlans = 32;
  auto key = std::make_tuple(n, rows, t);
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  if (plans_.size() >= kMaxPlans) {
    for (auto& [k, p] : plans_) {
      cufftDestroy(p.forward);
      cufftDestroy(p.inverse);
      unscratch(p.work, p.work_bytes);
    }
    plans_.clear();
  }
  // Basic layout (null embeds): `rows` rows of n reals <-> `rows` rows of n/2 + 1 complex numbers.
  FftPlans p;
  const bool f32 = t == DType::f32, own_work = (bool)scratch_alloc_;
  int len = (int)n;
  size_t wf = 0, wi = 0;
  cufftHandle fwd = 0, inv = 0;
  DL_CUDA_CHECK(cufftCreate(&fwd));
  cufftResult r = cufftCreate(&inv);
  if (r == CUFFT_SUCCESS && own_work) r = cufftSetAutoAllocation(fwd, 0);
  if (r == CUFFT_SUCCESS && own_work) r = cufftSetAutoAllocation(inv, 0);
  if (r == CUFFT_SUCCESS)
    r = cufftMakePlanMany(fwd, 1, &len, nullptr, 1, 0, nullptr, 1, 0, f32 ? CUFFT_R2C : CUFFT_D2Z, (int)rows, &wf);
  if (r == CUFFT_SUCCESS)
    r = cufftMakePlanMany(inv, 1, &len, nullptr, 1, 0, nullptr, 1, 0, f32 ? CUFFT_C2R : CUFFT_Z2D, (int)rows, &wi);
  if (r == CUFFT_SUCCESS && own_work && (wf || wi)) {
    p.work_bytes = wf > wi ? wf : wi;
    try {
      p.work = scratch(p.work_bytes);  // throws, naming the bytes, when even an emptied cache cannot give it
    } catch (...) {
      cufftDestroy(fwd);
      cufftDestroy(inv);
      throw;
    }
    r = cufftSetWorkArea(fwd, p.work);
    if (r == CUFFT_SUCCESS) r = cufftSetWorkArea(inv, p.work);
  }
  if (r != CUFFT_SUCCESS) {
    cufftDestroy(fwd);
    cufftDestroy(inv);
    unscratch(p.work, p.work_bytes);
  }
  DL_CUDA_CHECK(r);
  p.forward = fwd, p.inverse = inv;
  return plans_.emplace(key, p).first->second;
}

void Gpu::rfft(DType t, int64_t n, int64_t rows, const void* in, void* out) {
  std::lock_guard<std::mutex> lock(fft_mu_);
  const FftPlans& p = fft_plans(n, rows, t);
  if (t == DType::f32) DL_CUDA_CHECK(cufftExecR2C(p.forward, (cufftReal*)in, (cufftComplex*)out));
  else DL_CUDA_CHECK(cufftExecD2Z(p.forward, (cufftDoubleReal*)in, (cufftDoubleComplex*)out));
}

void Gpu::irfft(DType t, int64_t n, int64_t rows, const void* in, void* out) {
  std::lock_guard<std::mutex> lock(fft_mu_);
  const FftPlans& p = fft_plans(n, rows, t);
  if (t == DType::f32) DL_CUDA_CHECK(cufftExecC2R(p.inverse, (cufftComplex*)in, (cufftReal*)out));
  else DL_CUDA_CHECK(cufftExecZ2D(p.inverse, (cufftDoubleComplex*)in, (cufftDoubleReal*)out));
}

DL_CUDA_LIBS_FAMILY(Gpu)

}  // namespace dl::cuda

namespace dl {

Backend* cuda_backend() {
  // Never destroyed: tensors may be freed during static destruction, after the CUDA runtime itself.
  static Backend* backend = new cuda::CudaBackend<cuda::Gpu>();
  return backend;
}

}  // namespace dl
