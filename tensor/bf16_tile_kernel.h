// tensor/bf16_tile_kernel.h - the one VDPBF16PS register tile that both bf16 products run on: the GEMM of the linear
// layers (tensor/bf16_gemm.cpp) and the blocked attention's tile products (tensor/bf16_tiles.cpp). Internal to those
// two files: each includes it where it has defined DL_BF16_TARGET (the target attribute that lets the AVX512_BF16
// instructions compile without -march flags) and included <immintrin.h>.
//
// Operand layout (pair words, kp = k / 2; tensor/bf16_tiles.h and bf16_gemm.h say more):
//   a[r ars + p aks]   word (r, p) of A, broadcast to all 16 lanes (the strides let one packed array serve as A or A^T)
//   b[p ldb + 16 w..]  16 columns of word row p of B per vector; B's rows have whole vectors (padded to 16 columns)
// A block of R rows x W vectors of C stays in registers for the whole k loop; per pair p, W loads of B, R broadcasts of
// A and R W VDPBF16PS. Each C element is one running float32 sum over the pairs in order, so neither the tile shape nor
// where a caller cuts rows, columns or threads changes its bits. C's last vector is read and written under the mask
// `last` (a ragged N); 0xFFFF where N is whole vectors.
#pragma once
#include <cstdint>

namespace dl::bf16_kernel {

// C block (R, 16 W) (+)= A rows (R, kp) . B (kp, 16 W): acc false starts from zero (C is not read), or from the row
// vector `bias` (16 W columns, the same for every row) where one is given: a linear layer's bias without a pass over C.
template <int R, int W>
DL_BF16_TARGET void tile(int64_t kp, const uint32_t* a, int64_t ars, int64_t aks, const uint32_t* b, int64_t ldb, float* c,
                         int64_t ldc, bool acc, __mmask16 last, const float* bias) {
  __m512 s[R][W];
#pragma GCC unroll 16
  for (int r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int w = 0; w < W; w++) {
      const __mmask16 m = w == W - 1 ? last : 0xFFFF;
      s[r][w] = acc    ? _mm512_maskz_loadu_ps(m, c + r * ldc + w * 16)
                : bias ? _mm512_maskz_loadu_ps(m, bias + w * 16)
                       : _mm512_setzero_ps();
    }
  for (int64_t p = 0; p < kp; p++) {
    __m512bh bv[W];
#pragma GCC unroll 4
    for (int w = 0; w < W; w++) bv[w] = (__m512bh)_mm512_loadu_si512((const void*)(b + p * ldb + w * 16));
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32((int)a[r * ars + p * aks]);
#pragma GCC unroll 4
      for (int w = 0; w < W; w++) s[r][w] = _mm512_dpbf16_ps(s[r][w], av, bv[w]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int w = 0; w < W; w++) _mm512_mask_storeu_ps(c + r * ldc + w * 16, w == W - 1 ? last : 0xFFFF, s[r][w]);
}

// M rows in blocks of R; the last M % R rows by the tiles for R - 1, R - 2, ... rows (one block each at most).
template <int R, int W>
DL_BF16_TARGET void row_blocks(int64_t M, int64_t kp, const uint32_t* a, int64_t ars, int64_t aks, const uint32_t* b, int64_t ldb,
                               float* c, int64_t ldc, bool acc, __mmask16 last, const float* bias = nullptr) {
  int64_t i = 0;
  for (; i + R <= M; i += R) tile<R, W>(kp, a + i * ars, ars, aks, b, ldb, c + i * ldc, ldc, acc, last, bias);
  if constexpr (R > 1)
    if (i < M) row_blocks<R - 1, W>(M - i, kp, a + i * ars, ars, aks, b, ldb, c + i * ldc, ldc, acc, last, bias);
}

}  // namespace dl::bf16_kernel
