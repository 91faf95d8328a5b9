// tests/cuda/smoke/smoke_blas.cpp - cuBLAS called directly, one GEMM per transpose pair, and the backend's matmul
// through tensor ops, each against a float64 triple loop on the host.
//   cublas.{s,d}gemm.XY   C (M x N) = alpha op(A) op(B) + beta C, column-major as cuBLAS defines it, X / Y = N or T;
//                         odd sizes (M 67, N 45, K 129: no dimension a multiple of a tile), alpha 1.5, beta 0.5 on a
//                         C that starts non-zero, leading dimensions larger than the rows (ld = rows + 3)
//   backend.matmul.*      dl::matmul of Device::cuda tensors (tensor/linalg.h -> the backend's matmul, cuBLAS
//                         strided-batched): a batched (3, 67, 129) @ a shared (129, 45), and a transposed view
// Error: scaled_err (smoke.h). Tolerances: float32 with K = 129 terms of size ~1 rounds at ~1e-6 of the result; 1e-5
// leaves room for any summation order, but not for TF32 (10-bit mantissa: ~1e-3), which would be a change of the
// backend's precision (docs/cuda.md: cuBLAS runs in true FP32).
#include <cublas_v2.h>

#include <random>

#include "tensor/linalg.h"
#include "tensor/ops.h"
#include "tests/cuda/smoke/smoke.h"

namespace dl::smoke {
namespace {

void blas_check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(call) + ": " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ")");
}

struct Handle {
  cublasHandle_t h = nullptr;
  Handle() { blas_check(cublasCreate(&h), "cublasCreate"); }
  ~Handle() { cublasDestroy(h); }
};

template <class T> std::vector<T> normal_values(size_t n, unsigned seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> d;
  std::vector<T> v(n);
  for (auto& x : v) x = (T)d(g);
  return v;
}

template <class T> Outcome gemm_item(bool ta, bool tb) {
  const int M = 67, N = 45, K = 129;
  const int a_rows = ta ? K : M, a_cols = ta ? M : K, b_rows = tb ? N : K, b_cols = tb ? K : N;
  const int lda = a_rows + 3, ldb = b_rows + 3, ldc = M + 3;
  const T alpha = 1.5, beta = 0.5;
  std::vector<T> A = normal_values<T>((size_t)lda * a_cols, 1), B = normal_values<T>((size_t)ldb * b_cols, 2),
                 C = normal_values<T>((size_t)ldc * N, 3);
  auto a = [&](int i, int k) { return (double)(ta ? A[k + (size_t)i * lda] : A[i + (size_t)k * lda]); };  // op(A)(i, k)
  auto b = [&](int k, int j) { return (double)(tb ? B[j + (size_t)k * ldb] : B[k + (size_t)j * ldb]); };  // op(B)(k, j)
  std::vector<double> want = as_double(C);  // the padding rows (i >= M) must come back untouched
  for (int j = 0; j < N; j++)
    for (int i = 0; i < M; i++) {
      double s = 0;
      for (int k = 0; k < K; k++) s += a(i, k) * b(k, j);
      want[i + (size_t)j * ldc] = alpha * s + beta * (double)C[i + (size_t)j * ldc];
    }
  DeviceBuffer dA(A.size() * sizeof(T)), dB(B.size() * sizeof(T)), dC(C.size() * sizeof(T));
  dA.put(A), dB.put(B), dC.put(C);
  Handle h;
  const cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  if constexpr (sizeof(T) == 4)
    blas_check(cublasSgemm(h.h, oa, ob, M, N, K, &alpha, (const float*)dA.get(), lda, (const float*)dB.get(), ldb, &beta,
                           (float*)dC.get(), ldc),
               "cublasSgemm");
  else
    blas_check(cublasDgemm(h.h, oa, ob, M, N, K, &alpha, (const double*)dA.get(), lda, (const double*)dB.get(), ldb, &beta,
                           (double*)dC.get(), ldc),
               "cublasDgemm");
  sync_check(sizeof(T) == 4 ? "cublasSgemm" : "cublasDgemm");
  Outcome o;
  o.tol = sizeof(T) == 4 ? 1e-5 : 1e-12;
  o.max_err = scaled_err(as_double(dC.get_as<T>(C.size())), want);
  o.detail = "M 67 N 45 K 129, ld +3, alpha 1.5, beta 0.5";
  return o;
}

// The host reference of a (B, M, K) @ (K, N) product, in f64.
std::vector<double> host_matmul(const Tensor& a, const Tensor& b) {
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1), batch = a.numel() / (M * K);
  const std::vector<double> A = f64_values(a), B = f64_values(b);
  std::vector<double> out(batch * M * N, 0.0);
  for (int64_t p = 0; p < batch; p++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t k = 0; k < K; k++) {
        const double x = A[(p * M + i) * K + k];
        for (int64_t j = 0; j < N; j++) out[(p * M + i) * N + j] += x * B[k * N + j];
      }
  return out;
}

Outcome backend_matmul_item(DType t) {
  Generator g(5);
  Tensor a = randn({3, 67, 129}, g, t), b = randn({129, 45}, g, t), c = randn({45, 129}, g, t);
  Outcome o;
  o.tol = t == DType::f32 ? 1e-5 : 1e-12;
  // batched @ shared: the stride-0 batch of the strided-batched call
  Tensor y = matmul(a.to(Device::cuda), b.to(Device::cuda));
  if (y.device() != Device::cuda) throw std::runtime_error("matmul of cuda tensors returned a " + std::string(device_name(y.device())) + " tensor");
  o.max_err = scaled_err(f64_values(y), host_matmul(a, b));
  // a transposed view on the device (tensor/linalg.cpp makes it contiguous on the device first)
  Tensor ct = c.to(Device::cuda).transpose(0, 1);
  Tensor z = matmul(a.to(Device::cuda), ct);
  o.max_err = std::max(o.max_err, scaled_err(f64_values(z), host_matmul(a, c.transpose(0, 1))));
  o.detail = "(3, 67, 129) @ (129, 45), and @ a transposed (45, 129) view";
  return o;
}

}  // namespace

void run_blas_items(Report& r, const std::string& skip) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const std::string pair = std::string(ta ? "T" : "N") + (tb ? "T" : "N");
      r.run("cublas.sgemm." + pair, [=] { return gemm_item<float>(ta, tb); }, skip);
      r.run("cublas.dgemm." + pair, [=] { return gemm_item<double>(ta, tb); }, skip);
    }
  r.run("backend.matmul.f32", [] { return backend_matmul_item(DType::f32); }, skip);
  r.run("backend.matmul.f64", [] { return backend_matmul_item(DType::f64); }, skip);
}

}  // namespace dl::smoke
