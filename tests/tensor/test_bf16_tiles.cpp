// tests/tensor/test_bf16_tiles.cpp - the attention tiles' kernel (VDPBF16PS, and AMX where usable) and pair packings
// (tensor/bf16_tiles.h).
// - Each packing against float_to_bf16 (tensor/bf16.h) bit for bit: which element goes in which half of which word,
//   the scale applied before rounding, zero partners for an odd count, zero words and rows up to the destination's size,
//   nothing written past it.
// - tile_gemm against a float64 product of the same bf16 operands, for the attention's shapes (K = 16 .. 128 pairs'
//   worth, N = 16 .. 128, rows 1 .. 130 so every row remainder of the 6- and 12-row tiles runs), A read directly and
//   transposed, C overwritten and accumulated. Tolerance: products of bf16 numbers are exact in float32, so only the
//   float32 additions round: |C - ref| <= 2 (K + 1) eps_f32 sum_k |a_k b_k| (as tests/tensor/test_bf16_gemm.cpp).
// Skips where the CPU has no AVX512_BF16 (or DL_BF16=off), saying so.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tensor/bf16.h"
#include "tensor/bf16_tiles.h"
#include "bf16_kernels.h"

using namespace dl;

namespace {

#define SKIP_WITHOUT_BF16() \
  if (!bf16_gemm_usable()) GTEST_SKIP() << "no bf16 arithmetic here: " << precision_note()

std::vector<float> uniform(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> U(-2.f, 2.f);
  std::vector<float> x(n);
  for (float& v : x) v = U(rng);
  // exact ties between two bf16 numbers: 1 + 2^-8 rounds down to 1 (even), 1 + 3 2^-8 up to 1 + 2^-6 (even); a
  // rounding that dropped the ties-to-even term or truncated would get one of them wrong
  const float ties[] = {1.00390625f, -1.01171875f, 1.01171875f, -1.00390625f};
  for (int i = 0; i < 4 && i < n; i++) x[i * n / 4] = ties[i];
  return x;
}
uint32_t word(float lo, float hi) { return (uint32_t)float_to_bf16(lo) | (uint32_t)float_to_bf16(hi) << 16; }
constexpr uint32_t kCanary = 0xDEADBEEFu;  // in every destination word the packing must not write

TEST(Bf16Tiles, PairsInRowsMatchTheScalarRounding) {
  SKIP_WITHOUT_BF16();
  for (int64_t n : {1, 7, 16, 33, 128}) {
    const int64_t rows = 5, ldx = n + 3, words = (n + 1) / 2 + 2, ldd = words + 1, dst_rows = 7;
    const float scale = 0.17677669f;  // 1/sqrt(32): not a power of two, so scaling before rounding matters
    std::vector<float> x = uniform(rows * ldx, (uint32_t)n);
    std::vector<uint32_t> dst(dst_rows * ldd + 1, kCanary);
    for (float s : {1.f, scale}) {
      bf16t::pairs_in_rows(x.data(), ldx, rows, n, s, dst.data(), ldd, words, dst_rows);
      for (int64_t r = 0; r < dst_rows; r++)
        for (int64_t p = 0; p < ldd; p++) {
          uint32_t want = kCanary;
          if (p < words && r < rows) {
            const float lo = 2 * p < n ? s * x[r * ldx + 2 * p] : 0.f, hi = 2 * p + 1 < n ? s * x[r * ldx + 2 * p + 1] : 0.f;
            want = word(lo, hi);
          } else if (p < words) {
            want = 0;
          }
          ASSERT_EQ(dst[r * ldd + p], want) << "n=" << n << " scale=" << s << " row " << r << " word " << p;
        }
      EXPECT_EQ(dst.back(), kCanary);
    }
  }
}

TEST(Bf16Tiles, PairsAcrossRowsAndTransposedMatchTheScalarRounding) {
  SKIP_WITHOUT_BF16();
  for (int64_t rows : {1, 6, 47, 48})
    for (int64_t n : {5, 32, 128, 301}) {  // 301: a head above 128 takes pairs_transposed's element-wise loop
      const int64_t ldx = n + 1;
      std::vector<float> x = uniform(rows * ldx, (uint32_t)(rows * 1000 + n));
      auto at = [&](int64_t r, int64_t j, float s) { return r < rows && j < n ? s * x[r * ldx + j] : 0.f; };
      // across rows: word (p, j) = [x(2p, j) | x(2p + 1, j)], prows covering the rows and two more
      const int64_t prows = (rows + 1) / 2 + 2, words = n + 16, ldd = words + 3;
      std::vector<uint32_t> a(prows * ldd, kCanary);
      bf16t::pairs_across_rows(x.data(), ldx, rows, n, 0.5f, a.data(), ldd, words, prows);
      for (int64_t p = 0; p < prows; p++)
        for (int64_t j = 0; j < ldd; j++)
          ASSERT_EQ(a[p * ldd + j], j < words ? word(at(2 * p, j, 0.5f), at(2 * p + 1, j, 0.5f)) : kCanary)
              << "across rows: rows=" << rows << " n=" << n << " word (" << p << ", " << j << ")";
      // transposed: word (p, r) = [x(r, 2p) | x(r, 2p + 1)], cols covering the rows and more
      const int64_t tw = (n + 1) / 2 + 1, cols = rows + 5, ldt = cols + 2;
      std::vector<uint32_t> t(tw * ldt, kCanary);
      bf16t::pairs_transposed(x.data(), ldx, rows, n, t.data(), ldt, cols, tw);
      for (int64_t p = 0; p < tw; p++)
        for (int64_t r = 0; r < ldt; r++)
          ASSERT_EQ(t[p * ldt + r], r < cols ? word(at(r, 2 * p, 1.f), at(r, 2 * p + 1, 1.f)) : kCanary)
              << "transposed: rows=" << rows << " n=" << n << " word (" << p << ", " << r << ")";
    }
}

// The backward's dS packing: both layouts from one read give the words of the two separate packings, canaries kept
// (odd and even rows, ragged and whole-vector n, the destination wider than the words it must write).
TEST(Bf16Tiles, PairsInAndAcrossRowsEqualTheTwoPackings) {
  SKIP_WITHOUT_BF16();
  for (int64_t rows : {1, 6, 47, 48})
    for (int64_t n : {5, 17, 32, 100, 128}) {
      const int64_t ldx = n + 3, kp = (n + 1) / 2, rp = (rows + 1) / 2, ld_in = kp + 5, ld_ac = n + 7;
      std::vector<float> x = uniform(rows * ldx, (uint32_t)(rows * 313 + n));
      for (int64_t i = 0; i < rows * ldx; i += 7) x[i] = 0.f;  // zeros and ties among the values
      std::vector<uint32_t> in1(rows * ld_in + 1, kCanary), in2 = in1, ac1(rp * ld_ac + 1, kCanary), ac2 = ac1;
      bf16t::pairs_in_rows(x.data(), ldx, rows, n, 1.f, in1.data(), ld_in, kp, rows);
      bf16t::pairs_across_rows(x.data(), ldx, rows, n, 1.f, ac1.data(), ld_ac, n, rp);
      bf16t::pairs_in_and_across_rows(x.data(), ldx, rows, n, in2.data(), ld_in, kp, ac2.data(), ld_ac, n, rp);
      for (size_t i = 0; i < in1.size(); i++)
        ASSERT_EQ(in2[i], in1[i]) << "in rows: rows=" << rows << " n=" << n << " row " << i / ld_in << " word " << i % ld_in;
      for (size_t i = 0; i < ac1.size(); i++)
        ASSERT_EQ(ac2[i], ac1[i]) << "across rows: rows=" << rows << " n=" << n << " word (" << i / ld_ac << ", " << i % ld_ac
                                  << ")";
    }
}

// C (M, N) (+)= A (M, 2 Kp) B (2 Kp, N) from packed words, against float64 of the bf16 values the words hold.
void check_tile_gemm(int64_t M, int64_t N, int64_t Kp, bool a_transposed, bool acc) {
  const std::string what = "M=" + std::to_string(M) + " N=" + std::to_string(N) + " Kp=" + std::to_string(Kp) +
                           (a_transposed ? " A^T" : "") + (acc ? " acc" : "");
  std::mt19937 rng((uint32_t)(M * 7919 + N * 31 + Kp));
  std::uniform_real_distribution<float> U(-2.f, 2.f);
  auto random_word = [&] { return word(U(rng), U(rng)); };  // two bf16 numbers in [-2, 2): no denormals, no infinities
  // A as stored: (M, Kp) with row stride Kp + 1, or transposed (Kp, M) with row stride M + 2
  const int64_t ars = a_transposed ? 1 : Kp + 1, aks = a_transposed ? M + 2 : 1;
  std::vector<uint32_t> A((a_transposed ? Kp * (M + 2) : M * (Kp + 1)) + 1), B(Kp * (N + 16));
  for (uint32_t& w : A) w = random_word();
  for (uint32_t& w : B) w = random_word();
  const int64_t ldb = N + 16, ldc = N + 5;
  std::vector<float> C0(M * ldc);
  for (float& v : C0) v = U(rng);
  std::vector<float> C = C0;
  bf16t::tile_gemm(acc, M, N, Kp, A.data(), ars, aks, B.data(), ldb, C.data(), ldc);
  auto half = [](uint32_t w, int k) { return (double)bf16_to_float((uint16_t)(k ? w >> 16 : w & 0xFFFF)); };
  int bad = 0;
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < ldc; j++) {
      if (j >= N) {
        ASSERT_EQ(C[i * ldc + j], C0[i * ldc + j]) << what << ": wrote outside C at (" << i << ", " << j << ")";
        continue;
      }
      double ref = acc ? C0[i * ldc + j] : 0.0, mag = std::abs(ref);
      for (int64_t p = 0; p < Kp; p++)
        for (int k = 0; k < 2; k++) {
          const double ab = half(A[i * ars + p * aks], k) * half(B[p * ldb + j], k);
          ref += ab, mag += std::abs(ab);
        }
      const double tol = 2.0 * (double)(2 * Kp + 1) * 1.19e-7 * mag;
      if (!(std::abs(C[i * ldc + j] - ref) <= tol) && bad++ < 5)
        ADD_FAILURE() << what << " at (" << i << ", " << j << "): " << C[i * ldc + j] << " vs " << ref << " (tol " << tol << ")";
    }
}

TEST(Bf16Tiles, TileGemmAgainstFloat64OfTheBf16Operands) {
  SKIP_WITHOUT_BF16();
  for (int kernel : test::bf16_kernels()) {  // the tiles follow the GEMM's kernel: VDPBF16PS, and AMX where usable
    SCOPED_TRACE(test::bf16_kernel_name(kernel));
    test::UseBf16Kernel use(kernel);
    for (int64_t M : {1, 5, 11, 13, 48, 130})
      for (int64_t N : {16, 32, 48, 64, 128})
        for (int64_t Kp : {1, 8, 16, 24, 64})
          for (bool at : {false, true})
            for (bool acc : {false, true}) check_tile_gemm(M, N, Kp, at, acc);
  }
}

TEST(Bf16Tiles, RejectsRaggedColumns) {
  SKIP_WITHOUT_BF16();
  std::vector<uint32_t> a(64, 0), b(64, 0);
  std::vector<float> c(64, 0.f);
  EXPECT_THROW(bf16t::tile_gemm(false, 1, 24, 1, a.data(), 1, 1, b.data(), 24, c.data(), 24), std::exception);
}

}  // namespace
