// tests/tensor/test_bf16_gemm.cpp - the bf16 GEMM (tensor/bf16_gemm.h) on each kernel this CPU has - the VDPBF16PS
// register tiles, and the AMX tiles (tensor/bf16_amx.h) where usable - against a float64 product of the bf16-rounded
// operands: every transpose pair, beta 0 and 1, ragged sizes (odd K, N not a multiple of 16, rows not a multiple of the
// tiles, more than one k chunk and one row group, row and column panels), leading dimensions wider than the matrices;
// one and two threads give the same bits, and so do the three VDPBF16PS tile shapes (AMX rounds its own way); dl::gemm,
// matmul and linear take it under Precision::bf16.
// Tolerance: the products of bf16 numbers are exact in float32 and the sums are float32 in another order, so the error
// is within K eps_f32 sum_k |a_k b_k|; the test asks 2 (K + 1) eps of that sum. A conversion that truncated instead
// of rounding, or that split a pair the wrong way, would be off by about 2^-9 sum |a b| and fails.
// Where the CPU has no AVX512_BF16 (or DL_BF16=off) the tests skip, saying so.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tensor/bf16.h"
#include "tensor/bf16_amx.h"
#include "tensor/bf16_gemm.h"
#include "tensor/linalg.h"
#include "tensor/tensor.h"
#include "bf16_kernels.h"

using namespace dl;

namespace {

struct Case {
  bool ta, tb;
  int64_t M, N, K;
  float beta;
};

struct Operands {
  int64_t lda, ldb, ldc;
  std::vector<float> A, B, C0;
};

Operands make(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  const int64_t ar = c.ta ? c.K : c.M, ac = c.ta ? c.M : c.K, br = c.tb ? c.N : c.K, bc = c.tb ? c.K : c.N;
  Operands o{ac + 3, bc + 5, c.N + 7, {}, {}, {}};
  o.A.resize(ar * o.lda), o.B.resize(br * o.ldb), o.C0.resize(c.M * o.ldc);
  for (float& v : o.A) v = U(rng);
  for (float& v : o.B) v = U(rng);
  for (float& v : o.C0) v = U(rng);
  return o;
}

std::vector<float> run(const Case& c, const Operands& o, int threads) {
  std::vector<float> C = o.C0;
  if (c.beta == 0.f)  // beta 0 must not read C: NaN there would show
    for (int64_t i = 0; i < c.M; i++)
      for (int64_t j = 0; j < c.N; j++) C[i * o.ldc + j] = NAN;
  bf16_gemm(c.ta, c.tb, c.M, c.N, c.K, o.A.data(), o.lda, o.B.data(), o.ldb, c.beta, C.data(), o.ldc, threads);
  return C;
}

std::string name(const Case& c) {
  return std::string(c.ta ? "T" : "N") + (c.tb ? "T" : "N") + " M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) +
         " K=" + std::to_string(c.K) + " beta=" + std::to_string((int)c.beta);
}

// C against the float64 product of the rounded operands, and nothing outside the (M, N) block written.
void check_against_f64(const Case& c, const Operands& o, const std::vector<float>& C) {
  auto a = [&](int64_t i, int64_t k) { return (double)round_to_bf16(c.ta ? o.A[k * o.lda + i] : o.A[i * o.lda + k]); };
  auto b = [&](int64_t k, int64_t j) { return (double)round_to_bf16(c.tb ? o.B[j * o.ldb + k] : o.B[k * o.ldb + j]); };
  int bad = 0;
  for (int64_t i = 0; i < c.M; i++) {
    for (int64_t j = 0; j < o.ldc; j++) {
      const float got = C[i * o.ldc + j];
      if (j >= c.N) {  // the padding columns of C are untouched
        ASSERT_EQ(got, o.C0[i * o.ldc + j]) << name(c) << ": wrote outside C at (" << i << ", " << j << ")";
        continue;
      }
      double ref = c.beta == 1.f ? (double)o.C0[i * o.ldc + j] : 0.0, mag = std::abs(ref);
      for (int64_t k = 0; k < c.K; k++) ref += a(i, k) * b(k, j), mag += std::abs(a(i, k) * b(k, j));
      const double tol = 2.0 * (double)(c.K + 1) * 1.19e-7 * mag + 1e-30;
      if (!(std::abs(got - ref) <= tol) && bad++ < 5)
        ADD_FAILURE() << name(c) << " at (" << i << ", " << j << "): " << got << " vs " << ref << " (tol " << tol << ")";
    }
  }
  EXPECT_EQ(bad, 0) << name(c);
}

std::vector<Case> cases() {
  std::vector<Case> cs;
  // {200, 70, 301}: the only case with M >= N large enough for two threads, so the only one that cuts row panels (as
  // the weight gradient does: M = 512 outputs, N = 128 inputs); each panel then starts inside the packed A.
  // N = 50 and 127: the 6 x 4 tile's last columns are four vectors, the last one partial (N % 64 in 49 .. 63).
  // K = 1100 and 1025: more than one k chunk of the AMX panels (256 pairs), the last one ragged.
  const int64_t sizes[][3] = {{1, 1, 1},       {7, 5, 3},      {13, 17, 33},  {6, 64, 2},     {37, 70, 257},
                              {100, 130, 300}, {150, 200, 64}, {65, 300, 41}, {200, 70, 301}, {9, 50, 20},
                              {30, 127, 9},    {33, 40, 1100}, {18, 48, 1025}};
  for (int t = 0; t < 4; t++)
    for (auto& s : sizes)
      for (float beta : {0.f, 1.f}) cs.push_back({(t & 1) != 0, (t & 2) != 0, s[0], s[1], s[2], beta});
  return cs;
}

#define REQUIRE_BF16() \
  if (!bf16_gemm_usable()) GTEST_SKIP() << precision_note() << " (" << cpu_info().name() << ")"

using test::bf16_kernel_name;
using test::bf16_kernels;
using UseTile = test::UseBf16Kernel;

}  // namespace

TEST(Bf16Gemm, AgainstFloat64OfRoundedOperands) {
  REQUIRE_BF16();
  for (int kernel : bf16_kernels()) {
    SCOPED_TRACE(bf16_kernel_name(kernel));
    UseTile use(kernel);
    uint32_t seed = 1;
    for (const Case& c : cases()) {
      Operands o = make(c, seed++);
      check_against_f64(c, o, run(c, o, 1));
    }
  }
}

TEST(Bf16Gemm, SameBitsForOneAndTwoThreadsAndEveryTile) {
  REQUIRE_BF16();
  uint32_t seed = 100;
  for (const Case& c : cases()) {
    Operands o = make(c, seed++);
    std::vector<float> one;
    {
      UseTile use(0);
      one = run(c, o, 1);
      EXPECT_EQ(run(c, o, 2), one) << name(c) << ": two threads";
    }
    for (int shape : {1, 2}) {
      UseTile use(shape);
      EXPECT_EQ(run(c, o, 2), one) << name(c) << ": tile shape " << shape;
    }
    if (amx::usable()) {
      UseTile use(3);
      const std::vector<float> amx_one = run(c, o, 1);
      EXPECT_EQ(run(c, o, 2), amx_one) << name(c) << ": AMX, two threads";
    }
  }
}

// Which kernel the CPUID choice takes, in words, and the AMX shape refused where AMX is not usable.
TEST(Bf16Gemm, PathNamesTheKernelInUse) {
  REQUIRE_BF16();
  const std::string path = bf16_gemm_path();
  if (amx::usable()) {
    EXPECT_NE(path.find("AMX"), std::string::npos) << path;
  } else {
    EXPECT_NE(path.find("VDPBF16PS"), std::string::npos) << path;
    EXPECT_THROW(set_bf16_tile(3), std::exception) << amx::unusable_reason();
  }
  UseTile use(0);
  EXPECT_NE(bf16_gemm_path().find("6 x 4"), std::string::npos) << bf16_gemm_path();
}

TEST(Bf16Gemm, DlGemmTakesItUnderTheMode) {
  REQUIRE_BF16();
  const Case c{false, true, 150, 200, 64, 0.f};  // large enough for dl::gemm's two panels
  Operands o = make(c, 9);
  std::vector<float> C(c.M * o.ldc, 0.f);
  {
    const test::PrecisionScope precision(Precision::bf16);
    const int nt = omp_get_max_threads();
    omp_set_num_threads(2);
    gemm<float>(c.ta, c.tb, c.M, c.N, c.K, 1.f, o.A.data(), o.lda, o.B.data(), o.ldb, 0.f, C.data(), o.ldc);
    omp_set_num_threads(nt);
  }
  std::vector<float> want = run(c, o, 1);
  for (int64_t i = 0; i < c.M; i++)
    for (int64_t j = 0; j < c.N; j++) ASSERT_EQ(C[i * o.ldc + j], want[i * o.ldc + j]) << "(" << i << ", " << j << ")";
}

TEST(Bf16Gemm, LinearAndMatmulRoundTheirOperands) {
  REQUIRE_BF16();
  Generator g(5);
  Tensor x = randn({4, 9, 40}, g), w = randn({24, 40}, g), b = randn({24}, g);
  Tensor y, z;
  {
    const test::PrecisionScope precision(Precision::bf16);
    y = linear(x, w, b), z = matmul(x, w.transpose(0, 1));
  }
  const float *px = x.data<float>(), *pw = w.data<float>(), *pb = b.data<float>(), *py = y.data<float>(), *pz = z.data<float>();
  for (int64_t r = 0; r < 36; r++)
    for (int64_t o = 0; o < 24; o++) {
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < 40; k++) {
        const double p = (double)round_to_bf16(px[r * 40 + k]) * round_to_bf16(pw[o * 40 + k]);
        ref += p, mag += std::abs(p);
      }
      const double tol = 2.0 * 41 * 1.19e-7 * (mag + std::abs(pb[o]));
      ASSERT_NEAR(pz[r * 24 + o], ref, tol) << "matmul row " << r << " col " << o;
      ASSERT_NEAR(py[r * 24 + o], ref + pb[o], tol) << "linear row " << r << " col " << o;
    }
}

// The bias as the starting value (beta 0, `bias`) against C filled with the bias and beta 1: the same bits, for every
// case above (ragged N, row and column panels: a column panel reads the bias from its own first column), one and two
// threads, K = 0 (C is the bias), and nothing outside the (M, N) block written. Then linear under bf16, which takes
// that path, against matmul plus the bias in the same order (bias first, then the pairs).
TEST(Bf16Gemm, BiasStartIsTheBiasCopiedWithBetaOne) {
  REQUIRE_BF16();
  std::vector<Case> cs = cases();
  cs.push_back({false, true, 20, 37, 0, 0.f});
  for (int kernel : bf16_kernels()) {
    SCOPED_TRACE(bf16_kernel_name(kernel));
    UseTile use(kernel);
    uint32_t seed = 300;
    for (Case c : cs) {
      if (c.beta != 0.f) continue;
      Operands o = make(c, seed++);
      std::vector<float> bias(c.N);
      for (int64_t j = 0; j < c.N; j++) bias[j] = o.C0[j] * 3.f;  // any values: the first row of C0, scaled
      Case c1 = c;
      c1.beta = 1.f;
      Operands o1 = o;
      for (int64_t i = 0; i < c.M; i++)
        for (int64_t j = 0; j < c.N; j++) o1.C0[i * o.ldc + j] = bias[j];
      const std::vector<float> want = run(c1, o1, 1);
      for (int threads : {1, 2}) {
        std::vector<float> C = o.C0;
        for (int64_t i = 0; i < c.M; i++)
          for (int64_t j = 0; j < c.N; j++) C[i * o.ldc + j] = NAN;  // beta 0 with a bias must not read C either
        bf16_gemm(c.ta, c.tb, c.M, c.N, c.K, o.A.data(), o.lda, o.B.data(), o.ldb, 0.f, C.data(), o.ldc, threads, bias.data());
        for (int64_t i = 0; i < c.M; i++)
          for (int64_t j = 0; j < o.ldc; j++) {
            const float w = j < c.N ? want[i * o.ldc + j] : o.C0[i * o.ldc + j];
            ASSERT_EQ(C[i * o.ldc + j], w) << name(c) << " threads " << threads << " at (" << i << ", " << j << ")";
          }
      }
    }
  }
  std::vector<float> v(4, 1.f);
  EXPECT_THROW(bf16_gemm(false, false, 2, 2, 2, v.data(), 2, v.data(), 2, 1.f, v.data(), 2, 1, v.data()), std::exception);

  Generator g(6);
  Tensor x = randn({4, 9, 40}, g), w = randn({50, 40}, g), b = randn({50}, g);  // N = 50: a ragged last vector
  Tensor y;
  {
    const test::PrecisionScope precision(Precision::bf16);
    y = linear(x, w, b);
  }
  std::vector<float> C(36 * 50);
  for (int64_t i = 0; i < 36; i++)
    for (int64_t j = 0; j < 50; j++) C[i * 50 + j] = b.data<float>()[j];
  bf16_gemm(false, true, 36, 50, 40, x.data<float>(), 40, w.data<float>(), 40, 1.f, C.data(), 50, 1);
  for (int64_t i = 0; i < 36 * 50; i++) ASSERT_EQ(y.data<float>()[i], C[i]) << "linear element " << i;
}

// B packed once (bf16_pack_b) and products over column slices of it (bf16_gemm_packed, as the LSTM's steps take them)
// against bf16_gemm on the same columns: the same bits, for both layouts of B, both of A, beta 0 and 1, a ragged last
// slice and odd K; a slice that does not start on a 16-column boundary is refused.
TEST(Bf16Gemm, PackedBOverColumnSlicesIsBf16Gemm) {
  REQUIRE_BF16();
  for (int kernel : bf16_kernels()) {
    SCOPED_TRACE(bf16_kernel_name(kernel));
    UseTile use(kernel);
    uint32_t seed = 500;
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (int64_t K : {9, 256, 301}) {
          const Case whole{ta, tb, 37, 200, K, 1.f};
          Operands o = make(whole, seed++);
          const Bf16PackedB P = bf16_pack_b(tb, o.B.data(), o.ldb, K, whole.N);
          for (float beta : {0.f, 1.f})
            for (auto [c0, n] : {std::pair<int64_t, int64_t>{0, 200}, {16, 64}, {128, 72}, {192, 8}}) {
              const float* Bs = tb ? o.B.data() + c0 * o.ldb : o.B.data() + c0;  // columns c0.. of op(B)
              std::vector<float> want = o.C0, got = o.C0;
              bf16_gemm(ta, tb, whole.M, n, K, o.A.data(), o.lda, Bs, o.ldb, beta, want.data() + c0, o.ldc, 1);
              bf16_gemm_packed(ta, whole.M, n, o.A.data(), o.lda, P, {c0}, beta, got.data(), o.ldc);
              ASSERT_EQ(got, want) << "ta " << ta << " tb " << tb << " K " << K << " beta " << beta << " columns " << c0 << ".."
                                   << c0 + n;
            }
        }
    {  // several slices in one call (A converted once, as the LSTM's four gates): each as its own call
      const Case whole{false, false, 20, 128, 64, 1.f};
      Operands o = make(whole, seed++);
      const Bf16PackedB P = bf16_pack_b(false, o.B.data(), o.ldb, 64, 128);
      std::vector<float> want = o.C0, got = o.C0;
      for (int64_t c0 : {0, 32, 64, 96}) bf16_gemm_packed(false, 20, 16, o.A.data(), o.lda, P, {c0}, 1.f, want.data(), o.ldc);
      bf16_gemm_packed(false, 20, 16, o.A.data(), o.lda, P, {0, 32, 64, 96}, 1.f, got.data(), o.ldc);
      ASSERT_EQ(got, want) << "four slices in one call";
    }
  }
  const Bf16PackedB P = bf16_pack_b(false, std::vector<float>(8 * 40, 1.f).data(), 40, 8, 40);
  std::vector<float> A(8, 1.f), C(40);
  EXPECT_THROW(bf16_gemm_packed(false, 1, 16, A.data(), 8, P, {8}, 0.f, C.data(), 40), std::exception);
  EXPECT_THROW(bf16_gemm_packed(false, 1, 32, A.data(), 8, P, {16}, 0.f, C.data(), 40), std::exception);
}

// X read once for both of its products (bf16_pack_both, as a linear layer's input and its dy are) against bf16_gemm
// converting X itself: the across-row words are bf16_pack_b's, and every product from the packed words has bf16_gemm's
// bits - X as op(A) (B float, either layout, with and without a bias), X^T as op(A) against a packed B - for odd and
// even row counts, ragged columns, one and two threads, on each kernel. A packed B whose K is not op(A)'s is refused.
TEST(Bf16Gemm, PackedBothIsBf16Gemm) {
  REQUIRE_BF16();
  Generator g(11);
  for (int kernel : bf16_kernels()) {
    SCOPED_TRACE(bf16_kernel_name(kernel));
    UseTile use(kernel);
    for (int64_t R : {37, 64, 301})
      for (int64_t C : {21, 40, 72})
        for (int threads : {1, 2}) {
          const std::string at = "R " + std::to_string(R) + " C " + std::to_string(C) + " threads " + std::to_string(threads);
          const int64_t N = 24, N2 = 30;
          Tensor X = randn({R, C}, g), W = randn({N, C}, g), W2 = randn({C, N}, g), b = randn({N}, g), Y = randn({R, N2}, g);
          const float *x = X.data<float>(), *w = W.data<float>(), *w2 = W2.data<float>(), *pb = b.data<float>();
          const Bf16PackedBoth both = bf16_pack_both(x, C, R, C, threads);
          const Bf16PackedB across = bf16_pack_b(false, x, C, R, C);
          ASSERT_EQ(both.across.Np, across.Np);
          ASSERT_TRUE(std::equal(across.data(), across.data() + (R + 1) / 2 * across.Np, both.across.data())) << at;
          for (const float* bias : {(const float*)nullptr, pb}) {
            std::vector<float> want(R * N), got(R * N);
            bf16_gemm(false, true, R, N, C, x, C, w, C, 0.f, want.data(), N, threads, bias);
            bf16_gemm(false, both, true, N, w, C, got.data(), N, threads, bias);
            ASSERT_EQ(got, want) << "X W^T " << at << (bias ? " with a bias" : "");
          }
          std::vector<float> want(R * N), got(R * N);
          bf16_gemm(false, false, R, N, C, x, C, w2, N, 0.f, want.data(), N, threads);
          bf16_gemm(false, both, false, N, w2, N, got.data(), N, threads);
          ASSERT_EQ(got, want) << "X W2 " << at;
          const Bf16PackedB PY = bf16_pack_b(false, Y.data<float>(), N2, R, N2);
          std::vector<float> want_t(C * N2), got_t(C * N2);
          bf16_gemm(true, false, C, N2, R, x, C, Y.data<float>(), N2, 0.f, want_t.data(), N2, threads);
          bf16_gemm(true, both, PY, got_t.data(), N2, threads);
          ASSERT_EQ(got_t, want_t) << "X^T Y " << at;
        }
  }
  Tensor X = randn({10, 8}, g), Y = randn({12, 4}, g);
  const Bf16PackedBoth both = bf16_pack_both(X.data<float>(), 8, 10, 8);
  std::vector<float> C(8 * 4);
  EXPECT_THROW(bf16_gemm(true, both, bf16_pack_b(false, Y.data<float>(), 4, 12, 4), C.data(), 4, 1), std::exception);
}

// The column sums packed with X (a linear layer's db from the read that packs its dy): bf16_column_sums' bits for any
// thread count (rows past one and several 256-row chunks, odd counts, ragged columns), within float32 rounding of the
// float64 sums, and the packed words the same as without the sums.
TEST(Bf16Gemm, PackedBothColumnSumsAreColumnSums) {
  REQUIRE_BF16();
  Generator g(13);
  for (int64_t R : {1, 37, 256, 301, 1027})
    for (int64_t C : {1, 21, 40, 72}) {
      const std::string at = "R " + std::to_string(R) + " C " + std::to_string(C);
      Tensor X = randn({R, C + 3}, g);  // row stride C + 3: the sums must not read past column C
      const float* x = X.data<float>();
      std::vector<float> want(C), plain2(C);
      bf16_column_sums(x, C + 3, R, C, 1, want.data());
      bf16_column_sums(x, C + 3, R, C, 2, plain2.data());
      ASSERT_EQ(plain2, want) << at << ": two threads";
      for (int64_t j = 0; j < C; j++) {
        double s = 0;
        for (int64_t r = 0; r < R; r++) s += x[r * (C + 3) + j];
        ASSERT_NEAR(want[j], s, 1e-6 * R) << at << " column " << j;
      }
      const Bf16PackedBoth plain = bf16_pack_both(x, C + 3, R, C, 2);
      for (int threads : {1, 2}) {
        std::vector<float> got(C, -1.f);
        const Bf16PackedBoth both = bf16_pack_both(x, C + 3, R, C, threads, got.data());
        ASSERT_EQ(got, want) << at << " threads " << threads;
        ASSERT_TRUE(std::equal(plain.across.data(), plain.across.data() + (R + 1) / 2 * plain.across.Np, both.across.data())) << at;
        ASSERT_TRUE(std::equal(plain.in_rows.get(), plain.in_rows.get() + R * ((C + 1) / 2), both.in_rows.get())) << at;
      }
    }
}

// bf16_pack_both_rows (a matrix made a block of rows at a time, the fused feed-forward's) gives bf16_pack_both's words
// and column sums on the same matrix, bit for bit, for any thread count; each block it asks for is whole pairs of rows
// within one 256-row chunk, asked for once.
TEST(Bf16Gemm, PackedBothRowsIsPackedBoth) {
  REQUIRE_BF16();
  Generator g(14);
  for (int64_t R : {1, 15, 37, 256, 301, 1027})
    for (int64_t C : {1, 21, 40}) {
      const std::string at = "R " + std::to_string(R) + " C " + std::to_string(C);
      Tensor X = randn({R, C}, g);
      const float* x = X.data<float>();
      std::vector<float> want(C);
      const Bf16PackedBoth plain = bf16_pack_both(x, C, R, C, 1, want.data());
      for (int threads : {1, 2}) {
        std::vector<int> asked(R, 0);
        auto rows = [&](int64_t r0, int64_t n, float* buf) {
          EXPECT_TRUE(r0 % 2 == 0 && n >= 1 && n <= kPackRowsAtOnce && r0 / 256 == (r0 + n - 1) / 256) << at << " r0 " << r0 << " n " << n;
          for (int64_t r = r0; r < r0 + n; r++) asked[r]++;
          std::copy(x + r0 * C, x + (r0 + n) * C, buf);
        };
        std::vector<float> got(C, -1.f);
        const Bf16PackedBoth both = bf16_pack_both_rows(R, C, rows, threads, got.data());
        ASSERT_EQ(got, want) << at << " threads " << threads;
        ASSERT_EQ(std::count(asked.begin(), asked.end(), 1), R) << at << ": each row asked for once";
        ASSERT_TRUE(std::equal(plain.across.data(), plain.across.data() + (R + 1) / 2 * plain.across.Np, both.across.data())) << at;
        ASSERT_TRUE(std::equal(plain.in_rows.get(), plain.in_rows.get() + R * ((C + 1) / 2), both.in_rows.get())) << at;
      }
    }
}

// Products inside amx::TileHold scopes (the tiles configured once and kept between panels, as the blocked attention
// runs its per-thread share), nested, and after the scopes close (configured again): the same bits as without.
TEST(Bf16Gemm, TileHoldKeepsTheBits) {
  REQUIRE_BF16();
  if (!amx::usable()) GTEST_SKIP() << "no AMX here: " << amx::unusable_reason();
  UseTile use(3);
  Generator g(12);
  Tensor A = randn({70, 90}, g), B = randn({90, 40}, g);
  auto product = [&]() {
    std::vector<float> C(70 * 40);
    bf16_gemm(false, false, 70, 40, 90, A.data<float>(), 90, B.data<float>(), 40, 0.f, C.data(), 40, 1);
    return C;
  };
  const std::vector<float> want = product();
  {
    amx::TileHold outer;
    EXPECT_EQ(product(), want) << "in a hold";
    {
      amx::TileHold inner;
      EXPECT_EQ(product(), want) << "in a nested hold";
    }
    EXPECT_EQ(product(), want) << "after the inner hold closed";
  }
  EXPECT_EQ(product(), want) << "after both closed";
}
