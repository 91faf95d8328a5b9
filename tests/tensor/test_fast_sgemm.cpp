// tests/tensor/test_fast_sgemm.cpp - the AVX-512 sgemm (tensor/fast_sgemm.h) against its plain twin, OpenBLAS's
// cblas_sgemm, and against a float64 product: every transpose pair, beta 0 and 1, sizes that are not multiples of the
// tiles (6 / 12 rows, 16 / 32 / 64 columns, 256-deep k chunks - 64-deep with A transposed -, 96-row groups) and
// leading dimensions wider than the matrices; a transposed A gives the bits of A transposed in memory first, SgemmPanels
// those of fast_sgemm; the bits do not depend on the thread count through dl::gemm's panels; linear and matmul agree
// with the switch off and on. Tolerance: both are float32 sums of K products in another grouping, so the error bound is
// K eps_f32 sum_k |a_k b_k| per element (each within a few units of it; the test asks 4 K eps of that sum).
// Where the build has no AVX-512 (fast_sgemm_compiled() false) everything goes to OpenBLAS and the tests skip.
#include <gtest/gtest.h>
#include <omp.h>

#include <cblas.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tensor/elementwise.h"
#include "tensor/fast_sgemm.h"
#include "tensor/linalg.h"
#include "tensor/tensor.h"

using namespace dl;

namespace {

struct Case {
  bool ta, tb;
  int64_t M, N, K;
  float beta;
};

// Runs fast_sgemm and cblas_sgemm on the same operands (padded leading dimensions, C seeded for beta 1) and checks
// both against the float64 product within 4 K eps_f32 sum_k |a b| + 1e-30 per element.
void check(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  const int64_t ar = c.ta ? c.K : c.M, ac = c.ta ? c.M : c.K, br = c.tb ? c.N : c.K, bc = c.tb ? c.K : c.N;
  const int64_t lda = ac + 3, ldb = bc + 5, ldc = c.N + 7;
  std::vector<float> A(ar * lda), B(br * ldb), C0(c.M * ldc);
  for (float& v : A) v = U(rng);
  for (float& v : B) v = U(rng);
  for (float& v : C0) v = U(rng);
  auto a = [&](int64_t i, int64_t k) { return (double)(c.ta ? A[k * lda + i] : A[i * lda + k]); };
  auto b = [&](int64_t k, int64_t j) { return (double)(c.tb ? B[j * ldb + k] : B[k * ldb + j]); };
  std::vector<float> Cf = C0, Cb = C0;
  if (c.beta == 0.f)  // beta 0 must not read C: NaN there would show
    for (int64_t i = 0; i < c.M; i++)
      for (int64_t j = 0; j < c.N; j++) Cf[i * ldc + j] = NAN;
  ASSERT_TRUE(fast_sgemm_applies(c.ta, c.tb, c.M, c.N, c.K, 1.f, c.beta));
  fast_sgemm(c.ta, c.tb, c.M, c.N, c.K, A.data(), lda, B.data(), ldb, c.beta, Cf.data(), ldc);
  cblas_sgemm(CblasRowMajor, c.ta ? CblasTrans : CblasNoTrans, c.tb ? CblasTrans : CblasNoTrans, (int)c.M, (int)c.N, (int)c.K, 1.f,
              A.data(), (int)lda, B.data(), (int)ldb, c.beta, Cb.data(), (int)ldc);
  const std::string what = std::string(c.ta ? "T" : "N") + (c.tb ? "T" : "N") + " M=" + std::to_string(c.M) +
                           " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K) + " beta=" + std::to_string(c.beta);
  int bad = 0;
  for (int64_t i = 0; i < c.M; i++) {
    for (int64_t j = 0; j < c.N; j++) {
      double ref = c.beta == 1.f ? (double)C0[i * ldc + j] : 0.0, mag = std::abs(ref);
      for (int64_t k = 0; k < c.K; k++) ref += a(i, k) * b(k, j), mag += std::abs(a(i, k) * b(k, j));
      const double tol = 4.0 * (double)(c.K + 1) * 1.19e-7 * mag + 1e-30;
      if (!(std::abs(Cf[i * ldc + j] - ref) <= tol) || !(std::abs(Cb[i * ldc + j] - ref) <= tol)) {
        if (bad++ < 3)
          ADD_FAILURE() << what << " at (" << i << ", " << j << "): fast " << Cf[i * ldc + j] << ", openblas "
                        << Cb[i * ldc + j] << ", float64 " << ref << " (tolerance " << tol << ")";
      }
    }
    for (int64_t j = c.N; j < ldc; j++)  // the padding of C's rows is never written
      if (Cf[i * ldc + j] != C0[i * ldc + j] && bad++ < 3) ADD_FAILURE() << what << ": wrote C's padding at " << i << ", " << j;
  }
  EXPECT_EQ(bad, 0) << what;
}

}  // namespace

TEST(FastSgemm, AgreesWithOpenBlasAndFloat64) {
  if (!fast_sgemm_compiled()) GTEST_SKIP() << "built without AVX-512: every product runs on OpenBLAS";
  const bool was = set_fast_sgemm(true);
  uint32_t seed = 1;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (float beta : {0.f, 1.f}) {
        // rows 1..13 and 97 (a 96-row group and one more), columns 16..80 and 17, 33, 65, 100 (ragged tails go to
        // cblas), depth 1, 7, 256 and 300 (a second k chunk)
        for (int64_t M : {1, 4, 6, 7, 13, 97})
          for (int64_t N : {16, 17, 33, 64, 65, 100})
            for (int64_t K : {1, 7, 256, 300}) check({ta, tb, M, N, K, beta}, seed++);
      }
  set_fast_sgemm(was);
}

// What linear and matmul give with the fast path on and off (the switch the env var DL_SGEMM=openblas sets), and on 1
// and 2 threads with it on (dl::gemm cuts panels at row or column blocks; each element is one sum in order).
TEST(FastSgemm, LinearAndMatmulAgreeWithOpenBlasAndAcrossThreads) {
  if (!fast_sgemm_compiled()) GTEST_SKIP() << "built without AVX-512: every product runs on OpenBLAS";
  Generator g(3);
  Tensor x = randn({300, 130}, g), w = randn({70, 130}, g), b = randn({70}, g), dy = randn({300, 70}, g);
  Tensor m1 = randn({5, 40, 33}, g), m2 = randn({33, 48}, g);
  // 65 rows of 512 into 64: dl::gemm cuts it at row 64 on two threads, leaving a panel of one row
  Tensor x1 = randn({65, 512}, g), w1 = randn({64, 512}, g);
  auto run = [&](bool fast, int threads) {
    const bool was = set_fast_sgemm(fast);
    const int prev = omp_get_max_threads();
    omp_set_num_threads(threads);
    Tensor y = linear(x, w, b);
    LinearGrads gr = linear_backward(x, w, dy, true, true, true);
    Tensor m = matmul(m1, m2);
    Tensor y1 = linear(x1, w1, Tensor());
    omp_set_num_threads(prev);
    set_fast_sgemm(was);
    return std::vector<Tensor>{y, gr.dx, gr.dw, gr.db, m, y1};
  };
  std::vector<Tensor> plain = run(false, 2), fast2 = run(true, 2), fast1 = run(true, 1);
  const char* names[] = {"linear y", "dx", "dw", "db", "matmul", "linear over a one-row panel"};
  for (size_t i = 0; i < plain.size(); i++) {
    std::vector<float> p = plain[i].to_vector(), f = fast2[i].to_vector(), f1 = fast1[i].to_vector();
    double worst = 0;
    for (size_t j = 0; j < p.size(); j++) worst = std::max(worst, (double)std::abs(p[j] - f[j]) / (1.0 + std::abs(p[j])));
    EXPECT_LT(worst, 2e-5) << names[i] << ": fast against OpenBLAS";
    EXPECT_EQ(f, f1) << names[i] << ": the bits on 2 threads and on 1";
  }
}

TEST(FastSgemm, TakesOnlyWhatItCanCompute) {
  if (!fast_sgemm_compiled()) {
    EXPECT_FALSE(fast_sgemm_applies(false, false, 100, 100, 100, 1.f, 0.f));
    GTEST_SKIP() << "built without AVX-512";
  }
  const bool was = set_fast_sgemm(true);
  EXPECT_TRUE(fast_sgemm_applies(false, false, 100, 16, 1, 1.f, 0.f));
  EXPECT_FALSE(fast_sgemm_applies(false, false, 100, 15, 100, 1.f, 0.f)) << "fewer columns than a vector";
  EXPECT_FALSE(fast_sgemm_applies(false, false, 100, 100, 100, 2.f, 0.f)) << "alpha 2";
  EXPECT_FALSE(fast_sgemm_applies(false, false, 100, 100, 100, 1.f, 0.5f)) << "beta 0.5";
  EXPECT_TRUE(fast_sgemm_applies(false, true, 1, 100, 100, 1.f, 0.f)) << "one row: the choice may not depend on M";
  set_fast_sgemm(false);
  EXPECT_FALSE(fast_sgemm_applies(false, false, 100, 100, 100, 1.f, 0.f)) << "switched off";
  set_fast_sgemm(was);
}

// A transposed A (ta: A stored as (K, M)) takes its own blocking - its k chunks and row groups copied into contiguous
// blocks, 64-deep chunks, op(B) in 64-column panels - but each element is still one running sum over k in order, so it
// gives the bits of the same product with A transposed in memory first: for both B layouts, beta 0 and 1, a bias,
// ragged sizes (several k chunks, row groups and panels, a part panel) and padded leading dimensions. The columns past
// the last vector go to cblas, whose bits may depend on the transpose, so only the vector columns are compared.
TEST(FastSgemm, TransposedAIsThePlainAsBitForBit) {
  if (!fast_sgemm_compiled()) GTEST_SKIP() << "built without AVX-512: every product runs on OpenBLAS";
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  for (bool tb : {false, true})
    for (int mode : {0, 1, 2})  // beta 0, beta 1, a bias
      for (int64_t M : {13, 97, 200})
        for (int64_t N : {16, 70, 130})
          for (int64_t K : {7, 64, 65, 300}) {
            const int64_t lda = M + 3, ldat = K + 1, ldb = (tb ? K : N) + 5, ldc = N + 7, N16 = N / 16 * 16;
            std::vector<float> A(K * lda), At(M * ldat), B((tb ? N : K) * ldb), bias(N), C1(M * ldc);
            for (float& v : A) v = U(rng);
            for (int64_t i = 0; i < M; i++)
              for (int64_t k = 0; k < K; k++) At[i * ldat + k] = A[k * lda + i];
            for (float& v : B) v = U(rng);
            for (float& v : bias) v = U(rng);
            for (float& v : C1) v = U(rng);
            std::vector<float> C2 = C1;
            const float beta = mode == 1 ? 1.f : 0.f;
            const float* pb = mode == 2 ? bias.data() : nullptr;
            fast_sgemm(true, tb, M, N, K, A.data(), lda, B.data(), ldb, beta, C1.data(), ldc, pb);
            fast_sgemm(false, tb, M, N, K, At.data(), ldat, B.data(), ldb, beta, C2.data(), ldc, pb);
            for (int64_t i = 0; i < M; i++)
              for (int64_t j = 0; j < N16; j++)
                ASSERT_EQ(C1[i * ldc + j], C2[i * ldc + j])
                    << "tb " << tb << " mode " << mode << " M " << M << " N " << N << " K " << K << " at " << i << ", " << j;
          }
}

// SgemmPanels (B's column blocks copied once for repeated products) gives fast_sgemm's bits on each block: several
// blocks at ragged offsets, panel widths with a part panel (48, 80, 128 columns), k in one, two and three chunks,
// beta 0 and 1, a padded A; the columns between the blocks are never written. And it says which widths it takes.
TEST(FastSgemm, PanelsAreFastSgemmBitForBit) {
  if (!fast_sgemm_compiled()) GTEST_SKIP() << "built without AVX-512: every product runs on OpenBLAS";
  EXPECT_TRUE(SgemmPanels::applies(128));
  EXPECT_FALSE(SgemmPanels::applies(40));
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  for (int64_t n : {48, 80, 128})
    for (int64_t K : {7, 128, 300})
      for (float beta : {0.f, 1.f})
        for (int64_t M : {13, 64}) {
          const std::vector<int64_t> c0s = {0, n + 5, 2 * n + 37};
          const int64_t ldb = 3 * n + 40, lda = K + 3;
          std::vector<float> A(M * lda), B(K * ldb), C1(M * ldb);
          for (float& v : A) v = U(rng);
          for (float& v : B) v = U(rng);
          for (float& v : C1) v = U(rng);
          std::vector<float> C2 = C1, before = C1;
          SgemmPanels panels(B.data(), ldb, K, c0s, n);
          panels.product(M, A.data(), lda, beta, C1.data(), ldb);
          for (int64_t c0 : c0s) fast_sgemm(false, false, M, n, K, A.data(), lda, B.data() + c0, ldb, beta, C2.data() + c0, ldb);
          for (int64_t i = 0; i < M * ldb; i++)
            ASSERT_EQ(C1[i], C2[i]) << "n " << n << " K " << K << " beta " << beta << " M " << M << " at " << i / ldb << ", "
                                    << i % ldb << (C1[i] == before[i] ? "" : " (written)");
        }
}

// A linear layer's bias as the tiles' starting value (fast_sgemm's `bias`, beta 0) against the bias copied into C and
// beta 1: the same bits, for ragged N (the columns past the last vector go to cblas with the bias copied there), both
// transpose pairs of B, two k chunks; nothing outside (M, N) written. Then linear in float32 and float64 against the
// copy + matmul it replaced, bit for bit, on 1 and 2 threads (row and column panels), and with the fast path off.
TEST(FastSgemm, BiasStartIsTheBiasCopiedWithBetaOne) {
  if (!fast_sgemm_compiled()) GTEST_SKIP() << "built without AVX-512: every product runs on OpenBLAS";
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  for (bool tb : {false, true})
    for (int64_t N : {16, 33, 64, 100})
      for (int64_t K : {7, 300}) {
        const int64_t M = 13, lda = K + 3, ldb = (tb ? K : N) + 5, ldc = N + 7;
        std::vector<float> A(M * lda), B((tb ? N : K) * ldb), bias(N), C1(M * ldc), C2;
        for (float& v : A) v = U(rng);
        for (float& v : B) v = U(rng);
        for (float& v : bias) v = U(rng);
        for (float& v : C1) v = U(rng);
        C2 = C1;
        for (int64_t i = 0; i < M; i++)
          for (int64_t j = 0; j < N; j++) C1[i * ldc + j] = bias[j], C2[i * ldc + j] = NAN;
        fast_sgemm(false, tb, M, N, K, A.data(), lda, B.data(), ldb, 1.f, C1.data(), ldc);
        fast_sgemm(false, tb, M, N, K, A.data(), lda, B.data(), ldb, 0.f, C2.data(), ldc, bias.data());
        for (int64_t i = 0; i < M * ldc; i++)
          ASSERT_EQ(C2[i], C1[i]) << "tb " << tb << " N " << N << " K " << K << " at " << i / ldc << ", " << i % ldc;
      }
  Generator g(4);
  for (DType dt : {DType::f32, DType::f64}) {
    // 300 x 70 cuts row panels on two threads, 20 x 130 column panels (a column panel reads the bias from its column)
    for (auto [R, out] : {std::pair<int64_t, int64_t>{300, 70}, {20, 130}}) {
      Tensor x = randn({R, 130}, g).to(dt), w = randn({out, 130}, g).to(dt), b = randn({out}, g).to(dt);
      const int nt = omp_get_max_threads();
      for (bool fast : {true, false})
        for (int threads : {1, 2}) {
          const bool was = set_fast_sgemm(fast);
          omp_set_num_threads(threads);
          Tensor want = Tensor::empty({R, out}, dt);  // what linear did before: the bias copied, then y += x w^T
          copy_into(want, b);
          matmul_into(want, x, w.transpose(0, 1), true);
          Tensor y = linear(x, w, b);
          omp_set_num_threads(nt);
          set_fast_sgemm(was);
          ASSERT_EQ(std::memcmp(y.raw_data(), want.raw_data(), (size_t)want.numel() * dtype_size(dt)), 0)
              << "linear with a bias, " << dtype_name(dt) << " R " << R << " fast " << fast << " threads " << threads;
        }
    }
  }
}
