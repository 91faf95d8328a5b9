// tensor/fast_sgemm.cpp - float32 GEMM on the AVX-512 register tiles (blocking and reasons in the header).
#include "tensor/fast_sgemm.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "tensor/allocator.h"
#include "tensor/microkernel.h"
#include "tensor/tensor.h"  // fail

namespace dl {

namespace {

bool env_on() {
  const char* e = std::getenv("DL_SGEMM");
  return !(e && std::strcmp(e, "openblas") == 0);
}
std::atomic<bool> g_on{fast_sgemm_compiled() && env_on()};

#if defined(__AVX512F__)
constexpr int64_t kKc = 256;  // k per chunk: a 6-row A block (6 KB) and a 64-column B block (64 KB) per chunk
constexpr int64_t kMc = 96;   // rows per group: a multiple of the kernels' 6 and 12 rows

// Bp (K, N) = the transpose of B (N, K) with row stride ldb: 16 rows of B at a time, so each store is a run of 16.
void transpose_into(const float* B, int64_t ldb, int64_t K, int64_t N, float* Bp) {
  for (int64_t j0 = 0; j0 < N; j0 += 16) {
    const int64_t nj = std::min<int64_t>(16, N - j0);
    for (int64_t k = 0; k < K; k++)
      for (int64_t j = 0; j < nj; j++) Bp[k * N + j0 + j] = B[(j0 + j) * ldb + k];
  }
}
#endif

}  // namespace

bool fast_sgemm_compiled() {
#if defined(__AVX512F__)
  return true;
#else
  return false;
#endif
}
bool set_fast_sgemm(bool on) { return g_on.exchange(on && fast_sgemm_compiled()); }
bool fast_sgemm_enabled() { return g_on.load(std::memory_order_relaxed); }

bool fast_sgemm_applies(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, float beta) {
  if (!fast_sgemm_enabled() || alpha != 1.f || (beta != 0.f && beta != 1.f)) return false;
  // Nothing here may depend on M: dl::gemm cuts rows into panels whose sizes depend on the thread count, and every
  // row must take the same kernel whatever the cut (the column tails of a column cut fall on multiples of 64).
  return N >= micro::kV && M >= 1 && K >= 1;
}

void fast_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                float beta, float* C, int64_t ldc, const float* bias) {
#if defined(__AVX512F__)
  if (bias && beta != 0.f) fail("fast_sgemm: a bias with beta 1 (the bias is the starting value in place of C)");
  const int64_t N16 = N / micro::kV * micro::kV;  // the columns the vectors cover; the rest go to cblas below
  const float* Bk = B;                            // op(B) with its rows contiguous, row stride ldbk
  int64_t ldbk = ldb;
  struct Scratch {  // from the caching allocator (thread-safe), so the copy costs no fresh pages and is not kept
    size_t bytes = 0;
    float* p = nullptr;
    ~Scratch() {
      if (p) host_free(p, bytes);
    }
  } packed;
  if (tb) {
    packed.bytes = (size_t)(K * N16) * sizeof(float);
    packed.p = (float*)host_alloc(packed.bytes);
    transpose_into(B, ldb, K, N16, packed.p);
    Bk = packed.p, ldbk = N16;
  }
  const int64_t ars = ta ? 1 : lda, aks = ta ? lda : 1;  // op(A)(r, k) = A[r ars + k aks]
  for (int64_t k0 = 0; k0 < K; k0 += kKc) {
    const int64_t kc = std::min(kKc, K - k0);
    const bool acc = k0 > 0 || beta == 1.f;  // the first chunk starts from 0 (beta 0: C is not read)
    for (int64_t i0 = 0; i0 < M; i0 += kMc) {
      const int64_t mc = std::min(kMc, M - i0);
      const float* a = A + i0 * ars + k0 * aks;
      if (acc) micro::gemm<true>(mc, N16, kc, a, ars, aks, Bk + k0 * ldbk, ldbk, C + i0 * ldc, ldc);
      else micro::gemm<false>(mc, N16, kc, a, ars, aks, Bk + k0 * ldbk, ldbk, C + i0 * ldc, ldc, bias);
    }
  }
  if (N16 < N) {  // the ragged columns: op(B)'s columns N16.. are B's columns (B + N16) or, transposed, its rows
    if (bias)     // there the bias is copied in and cblas adds (beta 1)
      for (int64_t i = 0; i < M; i++) std::copy(bias + N16, bias + N, C + i * ldc + N16);
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)(N - N16),
                (blasint)K, 1.f, A, (blasint)lda, tb ? B + N16 * ldb : B + N16, (blasint)ldb, bias ? 1.f : beta, C + N16,
                (blasint)ldc);
  }
#else  // fast_sgemm_applies is false in such a build, so no caller gets here
  fail("fast_sgemm: this build has no AVX-512 (check fast_sgemm_applies first)");
#endif
}

}  // namespace dl
