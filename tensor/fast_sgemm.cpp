// tensor/fast_sgemm.cpp - float32 GEMM on the AVX-512 register tiles (blocking and reasons in the header).
#include "tensor/fast_sgemm.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <optional>

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
constexpr int64_t kPanelW = 64;  // columns of a copied panel of op(B) (the transposed-A path, SgemmPanels)

#if defined(__AVX512F__)
constexpr int64_t kPanelK = 128;  // SgemmPanels' k chunk
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

// op(A) = A^T (ta: the weight gradients dW = dY^T X, the LSTM's dW_hh = dG^T H). A(r, k) = A[k lda + r], so a row
// block's k loop reads one short run per k, lda floats apart - with lda = 1024 a new page at every k, past what the
// TLB and the prefetchers follow. There each k chunk of op(B) is first copied into contiguous (kc, 64) panels and each
// row group's chunk of A into a contiguous (kc, mc) block, and k runs in chunks of 64, so that a panel's chunk
// (16 KiB) and A's block (24 KiB) stay in L1 together while the row blocks sweep them. O(K (M + N)) copies against
// the product's O(M N K); each element is still one running sum over k in order (the bits do not change). One core of
// the Intel Xeon VM (2026-12-06): (512, 6400)^T x (6400, 256) 108 -> 164 GFLOP/s, (256, 16384)^T x (16384, 128)
// 112 -> 130.
constexpr int64_t kKcT = 64;
void sgemm_transposed_a(bool tb, int64_t M, int64_t N16, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                        float beta, float* C, int64_t ldc, const float* bias) {
  HostScratch<float> bp((size_t)(std::min(kKcT, K) * N16)), ap((size_t)(std::min(kKcT, K) * std::min(kMc, M)));
  for (int64_t k0 = 0; k0 < K; k0 += kKcT) {
    const int64_t kc = std::min(kKcT, K - k0);
    const bool acc = k0 > 0 || beta == 1.f;
    for (int64_t j0 = 0; j0 < N16; j0 += kPanelW) {  // op(B)[k0 : k0 + kc, j0 : j0 + w] -> bp.p + kc j0, (kc, w)
      const int64_t w = std::min(kPanelW, N16 - j0);
      float* d = bp.p + kc * j0;
      if (tb) transpose_into(B + j0 * ldb + k0, ldb, kc, w, d);
      else
        for (int64_t k = 0; k < kc; k++) std::copy(B + (k0 + k) * ldb + j0, B + (k0 + k) * ldb + j0 + w, d + k * w);
    }
    for (int64_t i0 = 0; i0 < M; i0 += kMc) {
      const int64_t mc = std::min(kMc, M - i0);
      for (int64_t k = 0; k < kc; k++) std::copy(A + (k0 + k) * lda + i0, A + (k0 + k) * lda + i0 + mc, ap.p + k * mc);
      for (int64_t j0 = 0; j0 < N16; j0 += kPanelW) {
        const int64_t w = std::min(kPanelW, N16 - j0);
        float* c = C + i0 * ldc + j0;
        if (acc) micro::gemm<true>(mc, w, kc, ap.p, 1, mc, bp.p + kc * j0, w, c, ldc);
        else micro::gemm<false>(mc, w, kc, ap.p, 1, mc, bp.p + kc * j0, w, c, ldc, bias ? bias + j0 : nullptr);
      }
    }
  }
}

// op(A) = A: its rows are read in place (a row block's k loop streams each of its rows); a transposed B (B^T stored
// as (N, K), e.g. a linear layer's weight) is first copied to (K, N16), k in chunks of kKc.
void sgemm_rows_of_a(bool tb, int64_t M, int64_t N16, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                     float beta, float* C, int64_t ldc, const float* bias) {
  std::optional<HostScratch<float>> bt;  // op(B) with its rows contiguous: B itself, or its transpose
  if (tb) {
    bt.emplace((size_t)(K * N16));
    transpose_into(B, ldb, K, N16, bt->p);
  }
  const float* Bk = tb ? bt->p : B;
  const int64_t ldbk = tb ? N16 : ldb;
  for (int64_t k0 = 0; k0 < K; k0 += kKc) {
    const int64_t kc = std::min(kKc, K - k0);
    const bool acc = k0 > 0 || beta == 1.f;  // the first chunk starts from 0 (beta 0: C is not read)
    for (int64_t i0 = 0; i0 < M; i0 += kMc) {
      const int64_t mc = std::min(kMc, M - i0);
      const float* a = A + i0 * lda + k0;
      if (acc) micro::gemm<true>(mc, N16, kc, a, lda, 1, Bk + k0 * ldbk, ldbk, C + i0 * ldc, ldc);
      else micro::gemm<false>(mc, N16, kc, a, lda, 1, Bk + k0 * ldbk, ldbk, C + i0 * ldc, ldc, bias);
    }
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
  if (ta) sgemm_transposed_a(tb, M, N16, K, A, lda, B, ldb, beta, C, ldc, bias);
  else sgemm_rows_of_a(tb, M, N16, K, A, lda, B, ldb, beta, C, ldc, bias);
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

SgemmPanels::SgemmPanels(const float* B, int64_t ldb, int64_t K, std::vector<int64_t> c0s, int64_t n)
    : K_(K), n_(n), c0s_(std::move(c0s)), panels_(c0s_.size() * K * n) {
  float* d = panels_.p;
  for (int64_t c0 : c0s_)
    for (int64_t j0 = 0; j0 < n; j0 += kPanelW) {
      const int64_t w = std::min(kPanelW, n - j0);
      for (int64_t k = 0; k < K; k++, d += w) std::copy(B + k * ldb + c0 + j0, B + k * ldb + c0 + j0 + w, d);
    }
}
bool SgemmPanels::applies(int64_t n) { return fast_sgemm_enabled() && n % 16 == 0; }

void SgemmPanels::product(int64_t M, const float* A, int64_t lda, float beta, float* C, int64_t ldc) const {
#if defined(__AVX512F__)
  const float* d = panels_.p;
  for (int64_t c0 : c0s_)
    for (int64_t j0 = 0; j0 < n_; j0 += kPanelW) {
      const int64_t w = std::min(kPanelW, n_ - j0);
      for (int64_t k0 = 0; k0 < K_; k0 += kPanelK) {
        const int64_t kc = std::min(kPanelK, K_ - k0);
        if (k0 > 0 || beta == 1.f) micro::gemm<true>(M, w, kc, A + k0, lda, 1, d + k0 * w, w, C + c0 + j0, ldc);
        else micro::gemm<false>(M, w, kc, A + k0, lda, 1, d + k0 * w, w, C + c0 + j0, ldc);
      }
      d += K_ * w;
    }
#else
  (void)M, (void)A, (void)lda, (void)beta, (void)C, (void)ldc;
  fail("SgemmPanels: this build has no AVX-512 (check SgemmPanels::applies first)");
#endif
}

}  // namespace dl
