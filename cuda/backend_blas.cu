// cuda/backend_blas.cu - matmul on cuBLAS: strided-batched GEMM in f32 / f64, row-major through the column-major
// library as C^T = B^T A^T. One handle, created on first use, in cuBLAS's default math mode (true FP32, no TF32).
#include "cuda/backend.cuh"
#include "cuda/checks.cuh"
#include "cuda/check.cuh"

namespace dl::cuda {

// cuBLAS is column-major. A row-major (M, N) buffer read column-major is its transpose, so we ask
// cuBLAS for C^T = B^T A^T: an (N, M) column-major product of b (as N x K, ld N) and a (as K x M, ld K),
// which lands in memory exactly as row-major C. Rank-2 operands are a batch of one; a batch of one
// against a batch of B is broadcast with a zero stride.
void CudaBackend::matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  const char* op = "matmul";
  require_cuda(a, op, "a");
  require_cuda(b, op, "b");
  require_cuda(out, op, "out");
  require_float(a, op);
  if (a.dtype() != b.dtype() || a.dtype() != out.dtype())
    fail(std::string("matmul (cuda): dtypes differ: a ") + dtype_name(a.dtype()) + ", b " + dtype_name(b.dtype()) + ", out " +
         dtype_name(out.dtype()));
  if ((a.dim() != 2 && a.dim() != 3) || (b.dim() != 2 && b.dim() != 3))
    fail("matmul (cuda): expected a (B, M, K) or (M, K) and b (B, K, N) or (K, N), got a " + shape_str(a.shape()) + " and b " +
         shape_str(b.shape()));
  int64_t Ba = a.dim() == 3 ? a.size(0) : 1, Bb = b.dim() == 3 ? b.size(0) : 1;
  int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  int64_t B = std::max(Ba, Bb);
  if (b.size(-2) != K || (Ba != Bb && Ba != 1 && Bb != 1))
    fail("matmul (cuda): a " + shape_str(a.shape()) + " and b " + shape_str(b.shape()) + " do not multiply");
  if (out.numel() != B * M * N || out.size(-1) != N)
    fail("matmul (cuda): out " + shape_str(out.shape()) + " should be " + shape_str({B, M, N}));
  if (out.numel() == 0) return;
  if (K == 0) return fill(out, 0.0);
  int m = to_int(N, op, "N"), n = to_int(M, op, "M"), k = to_int(K, op, "K"), batch = to_int(B, op, "B");
  long long sa = Ba == 1 ? 0 : M * K, sb = Bb == 1 ? 0 : K * N, sc = M * N;
  std::lock_guard<std::mutex> lock(blas_mu_);
  cublasHandle_t h = blas_handle();
  if (a.dtype() == DType::f32) {
    const float one = 1, zero = 0;
    DL_CUDA_CHECK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, (const float*)b.raw_data(), m, sb,
                                            (const float*)a.raw_data(), k, sa, &zero, (float*)out.raw_data(), m, sc, batch));
  } else {
    const double one = 1, zero = 0;
    DL_CUDA_CHECK(cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, (const double*)b.raw_data(), m, sb,
                                            (const double*)a.raw_data(), k, sa, &zero, (double*)out.raw_data(), m, sc, batch));
  }
}

cublasHandle_t CudaBackend::blas_handle() {
  if (!blas_) DL_CUDA_CHECK(cublasCreate(&blas_));  // default math mode: true FP32, no TF32
  return blas_;
}

}  // namespace dl::cuda
