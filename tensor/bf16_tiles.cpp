// tensor/bf16_tiles.cpp - the attention tiles' VDPBF16PS kernel and bf16 pair packings (layouts in the header).
#include "tensor/bf16_tiles.h"

#include <algorithm>
#include <cstring>

#include "tensor/bf16_amx.h"
#include "tensor/bf16_gemm.h"
#include "tensor/tensor.h"  // fail

#if defined(__x86_64__) && (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 13))
#define DL_BF16_TILES 1
#include <immintrin.h>
#define DL_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,fma")))
#if defined(__clang__)
#define DL_BF16_WIDE __attribute__((min_vector_width(512)))  // clang would otherwise keep the packing loops to 256 bits
#define DL_SCALAR_LOOP _Pragma("clang loop vectorize(disable)")
#else
#define DL_BF16_WIDE
#define DL_SCALAR_LOOP
#endif
#include "tensor/bf16_tile_kernel.h"  // the register tile (shared with bf16_gemm.cpp)
#include "tensor/transpose16.h"       // K^T and V^T's runs of 16 words
#endif

namespace dl::bf16t {

#if defined(DL_BF16_TILES)
namespace {

// float_to_bf16 (tensor/bf16.h) without the branch, so the packing loops vectorize: the rounded value in the upper 16
// bits of the result (the lower 16 bits are not cleared). A NaN is quieted instead of rounded, as there.
inline uint32_t rounded_high(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t r = u + 0x7FFFu + ((u >> 16) & 1u);
  return (u & 0x7FFFFFFFu) > 0x7F800000u ? u | 0x00400000u : r;
}
inline uint32_t pair_word(float lo, float hi) { return (rounded_high(lo) >> 16) | (rounded_high(hi) & 0xFFFF0000u); }

// rounded_high on 16 lanes
DL_BF16_TARGET inline __m512i rounded_high16(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i even = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), even);
  const __mmask16 nan =
      _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)), _mm512_set1_epi32(0x7F800000));
  return _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x00400000));
}

// A row's pair words are its bf16 values in order (little endian: x(r, 2p) is the low half of word p). 32 floats at
// a time: rounded in 32-bit lanes, then the upper halves of the two vectors gathered into one by a 16-bit permute
// (VPERMT2W; the narrowing store VPMOVDW would do it in one instruction, but it is slow on Zen 4: it took 40% of this
// loop). The tail is read under a mask, so an odd n gets a zero partner.
DL_BF16_TARGET inline void convert_row(const float* s, int64_t n, float scale, uint32_t* o, int64_t words) {
  alignas(64) static const uint16_t kHigh[32] = {1,  3,  5,  7,  9,  11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31,
                                                 33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63};
  const __m512i idx = _mm512_load_si512((const void*)kHigh);
  const __m512 sc = _mm512_set1_ps(scale);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512i a = rounded_high16(_mm512_mul_ps(sc, _mm512_loadu_ps(s + i)));
    const __m512i b = rounded_high16(_mm512_mul_ps(sc, _mm512_loadu_ps(s + i + 16)));
    _mm512_storeu_si512((void*)(o + i / 2), _mm512_permutex2var_epi16(a, idx, b));
  }
  if (i < n) {
    const int64_t left = n - i;  // 1 .. 31
    const __mmask16 ma = (__mmask16)((1u << std::min<int64_t>(left, 16)) - 1);
    const __mmask16 mb = left > 16 ? (__mmask16)((1u << (left - 16)) - 1) : 0;
    const __m512i a = rounded_high16(_mm512_mul_ps(sc, _mm512_maskz_loadu_ps(ma, s + i)));
    const __m512i b = rounded_high16(_mm512_mul_ps(sc, _mm512_maskz_loadu_ps(mb, s + i + 16)));
    const __mmask16 mw = (__mmask16)((1u << ((left + 1) / 2)) - 1);
    _mm512_mask_storeu_epi32((void*)(o + i / 2), mw, _mm512_permutex2var_epi16(a, idx, b));
  }
  std::fill(o + (n + 1) / 2, o + words, 0u);
}

DL_BF16_TARGET DL_BF16_WIDE void pack_in_rows(const float* x, int64_t ldx, int64_t rows, int64_t n, float scale, uint32_t* dst,
                                              int64_t ldd, int64_t words, int64_t dst_rows) {
  for (int64_t r = 0; r < rows; r++) convert_row(x + r * ldx, n, scale, dst + r * ldd, words);
  for (int64_t r = rows; r < dst_rows; r++) std::fill(dst + r * ldd, dst + r * ldd + words, 0u);
}

DL_BF16_TARGET DL_BF16_WIDE void pack_across_rows(const float* x, int64_t ldx, int64_t rows, int64_t n, float scale,
                                                  uint32_t* dst, int64_t ldd, int64_t words, int64_t prows) {
  for (int64_t p = 0; p < prows; p++) {
    uint32_t* o = dst + p * ldd;
    const int64_t r = 2 * p;
    if (r + 1 < rows) {
      const float *lo = x + r * ldx, *hi = lo + ldx;
#pragma omp simd
      for (int64_t j = 0; j < n; j++) o[j] = pair_word(scale * lo[j], scale * hi[j]);
    } else if (r < rows) {  // the last row of an odd count: a zero partner
      const float* lo = x + r * ldx;
#pragma omp simd
      for (int64_t j = 0; j < n; j++) o[j] = pair_word(scale * lo[j], 0.f);
    }
    std::fill(o + (r < rows ? n : 0), o + words, 0u);
  }
}

// The across-rows words of two rounded vectors: the low row's upper 16 bits shifted down, the high row's kept. A
// function, not a lambda: a lambda does not inherit the target attribute, so a build without -march=native
// (scripts/fuzz.sh's) could not compile its AVX-512 body.
DL_BF16_TARGET inline __m512i across_words(__m512i lo, __m512i hi) {
  return _mm512_or_si512(_mm512_srli_epi32(lo, 16), _mm512_and_si512(hi, _mm512_set1_epi32((int)0xFFFF0000u)));
}

// Rows 2p and 2p + 1 read once, 32 columns at a time: each rounded vector is a half of the across-rows words (the low
// row's upper 16 bits shifted down, the high row's kept) and, permuted as in convert_row, of its own row's words.
// Whole blocks with plain loads and stores, only the ragged end under masks: a masked store, even with every lane set,
// made this loop about 2x slower on the Zen 5 (16384 x 512 on two threads: 1.54-2.35 -> 0.82-1.28 ms, a memcpy of
// the same rows 0.88-1.14; masked loads with plain stores ran as fast as plain ones).
DL_BF16_TARGET DL_BF16_WIDE void pack_in_and_across_rows(const float* x, int64_t ldx, int64_t rows, int64_t n, uint32_t* in_rows,
                                                         int64_t ld_in, int64_t words_in, uint32_t* across, int64_t ld_across,
                                                         int64_t words_across, int64_t prows, float* sums) {
  alignas(64) static const uint16_t kHigh[32] = {1,  3,  5,  7,  9,  11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31,
                                                 33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63};
  const __m512i idx = _mm512_load_si512((const void*)kHigh);
  for (int64_t p = 0; p < prows; p++) {
    const int64_t r = 2 * p;
    uint32_t *o = across + p * ld_across, *ilo = in_rows + r * ld_in, *ihi = ilo + ld_in;
    if (r >= rows) {
      std::fill(o, o + words_across, 0u);
      continue;
    }
    const bool has_hi = r + 1 < rows;
    const float *lo = x + r * ldx, *hi = lo + ldx;
    int64_t j = 0;
    if (has_hi)
      for (; j + 32 <= n; j += 32) {  // whole blocks of two rows: plain loads and stores
        const __m512 l0 = _mm512_loadu_ps(lo + j), l1 = _mm512_loadu_ps(lo + j + 16);
        const __m512 h0 = _mm512_loadu_ps(hi + j), h1 = _mm512_loadu_ps(hi + j + 16);
        if (sums) {  // (s + x(r)) + x(r + 1), lane by lane: a row at a time, as column_sums adds them
          _mm512_storeu_ps(sums + j, _mm512_add_ps(_mm512_add_ps(_mm512_loadu_ps(sums + j), l0), h0));
          _mm512_storeu_ps(sums + j + 16, _mm512_add_ps(_mm512_add_ps(_mm512_loadu_ps(sums + j + 16), l1), h1));
        }
        const __m512i a0 = rounded_high16(l0), a1 = rounded_high16(l1);
        const __m512i b0 = rounded_high16(h0), b1 = rounded_high16(h1);
        _mm512_storeu_si512((void*)(o + j), across_words(a0, b0));
        _mm512_storeu_si512((void*)(o + j + 16), across_words(a1, b1));
        _mm512_storeu_si512((void*)(ilo + j / 2), _mm512_permutex2var_epi16(a0, idx, a1));
        _mm512_storeu_si512((void*)(ihi + j / 2), _mm512_permutex2var_epi16(b0, idx, b1));
      }
    for (; j < n; j += 32) {
      const int64_t left = std::min<int64_t>(32, n - j);
      const __mmask16 ma = (__mmask16)((1u << std::min<int64_t>(left, 16)) - 1);
      const __mmask16 mb = left > 16 ? (__mmask16)((1u << (left - 16)) - 1) : 0;
      const __m512 l0 = _mm512_maskz_loadu_ps(ma, lo + j), l1 = _mm512_maskz_loadu_ps(mb, lo + j + 16);
      const __m512 h0 = has_hi ? _mm512_maskz_loadu_ps(ma, hi + j) : _mm512_setzero_ps();
      const __m512 h1 = has_hi ? _mm512_maskz_loadu_ps(mb, hi + j + 16) : _mm512_setzero_ps();
      if (sums) {  // a missing partner row adds nothing (not even +0, which would turn a -0 sum into +0)
        __m512 s0 = _mm512_add_ps(_mm512_maskz_loadu_ps(ma, sums + j), l0);
        __m512 s1 = _mm512_add_ps(_mm512_maskz_loadu_ps(mb, sums + j + 16), l1);
        if (has_hi) s0 = _mm512_add_ps(s0, h0), s1 = _mm512_add_ps(s1, h1);
        _mm512_mask_storeu_ps(sums + j, ma, s0);
        _mm512_mask_storeu_ps(sums + j + 16, mb, s1);
      }
      const __m512i a0 = rounded_high16(l0), a1 = rounded_high16(l1);
      const __m512i b0 = has_hi ? rounded_high16(h0) : _mm512_setzero_si512();
      const __m512i b1 = has_hi ? rounded_high16(h1) : _mm512_setzero_si512();
      _mm512_mask_storeu_epi32((void*)(o + j), ma, across_words(a0, b0));
      _mm512_mask_storeu_epi32((void*)(o + j + 16), mb, across_words(a1, b1));
      const __mmask16 mw = (__mmask16)((1u << ((left + 1) / 2)) - 1);
      _mm512_mask_storeu_epi32((void*)(ilo + j / 2), mw, _mm512_permutex2var_epi16(a0, idx, a1));
      if (has_hi) _mm512_mask_storeu_epi32((void*)(ihi + j / 2), mw, _mm512_permutex2var_epi16(b0, idx, b1));
    }
    std::fill(o + n, o + words_across, 0u);
    std::fill(ilo + (n + 1) / 2, ilo + words_in, 0u);
    if (has_hi) std::fill(ihi + (n + 1) / 2, ihi + words_in, 0u);
  }
}

// 16 rows at a time: converted row by row into a (16, words) block, then written as runs of 16 words per pair (16
// pairs at a time turned over in registers where the run is whole: on the Zen 5 the word-by-word copy was most of this
// packing's time).
DL_BF16_TARGET DL_BF16_WIDE void pack_transposed(const float* x, int64_t ldx, int64_t rows, int64_t n, uint32_t* dst, int64_t ldd,
                                                 int64_t cols, int64_t words) {
  constexpr int64_t kRun = 16, kMaxWords = 64;  // heads up to 128 this way
  uint32_t block[kRun * kMaxWords];
  const int64_t used = (n + 1) / 2;
  for (int64_t r0 = 0; r0 < rows && used > kMaxWords; r0++) {  // a head above 128: element by element
    const float* s = x + r0 * ldx;
    for (int64_t p = 0; p < used; p++) dst[p * ldd + r0] = pair_word(s[2 * p], 2 * p + 1 < n ? s[2 * p + 1] : 0.f);
  }
  for (int64_t r0 = 0; r0 < rows && used <= kMaxWords; r0 += kRun) {
    const int64_t m = std::min(kRun, rows - r0);
    for (int64_t i = 0; i < m; i++) {
      // a row 16 ahead asked for now: the rows are a head's slice of qkv, 3C floats apart, and the loads of this walk
      // waited on memory (half of this function's samples on the Zen 5)
      if (r0 + i + kRun < rows) {
        const float* ahead = x + (r0 + i + kRun) * ldx;
        __builtin_prefetch(ahead), __builtin_prefetch(ahead + n - 1);
      }
      convert_row(x + (r0 + i) * ldx, n, 1.f, block + i * kMaxWords, used);
    }
    int64_t p = 0;
    if (m == kRun)
      for (; p + 16 <= used; p += 16) simd::transpose16<kMaxWords>(block + p, dst + p * ldd + r0, ldd);
    for (; p < used; p++) {
      // one run of up to 16 words; vectorized, this would be a gather per run, slower on Zen 4 than plain loads
      DL_SCALAR_LOOP
      for (int64_t i = 0; i < m; i++) dst[p * ldd + r0 + i] = block[i * kMaxWords + p];
    }
  }
  for (int64_t p = 0; p < words; p++) std::fill(dst + p * ldd + (p < used ? rows : 0), dst + p * ldd + cols, 0u);
}

}  // namespace

void tile_gemm(bool acc, int64_t M, int64_t N, int64_t Kp, const uint32_t* a, int64_t ars, int64_t aks, const uint32_t* b,
               int64_t ldb, float* c, int64_t ldc) {
  if (N % 16) fail("bf16t::tile_gemm: N = " + std::to_string(N) + ", expected a multiple of 16");
  if (bf16_amx_in_use()) return amx::panel(M, N, Kp, a, ars, aks, b, ldb, acc ? 1.f : 0.f, c, ldc, nullptr);
  int64_t j = 0;
  using bf16_kernel::row_blocks;  // whole vectors: no column is masked
  for (; j + 64 <= N; j += 64) row_blocks<6, 4>(M, Kp, a, ars, aks, b + j, ldb, c + j, ldc, acc, 0xFFFF);
  for (; j + 32 <= N; j += 32) row_blocks<12, 2>(M, Kp, a, ars, aks, b + j, ldb, c + j, ldc, acc, 0xFFFF);
  for (; j < N; j += 16) row_blocks<12, 1>(M, Kp, a, ars, aks, b + j, ldb, c + j, ldc, acc, 0xFFFF);
}

void pairs_in_rows(const float* x, int64_t ldx, int64_t rows, int64_t n, float scale, uint32_t* dst, int64_t ldd, int64_t words,
                   int64_t dst_rows) {
  pack_in_rows(x, ldx, rows, n, scale, dst, ldd, words, dst_rows);
}
void pairs_across_rows(const float* x, int64_t ldx, int64_t rows, int64_t n, float scale, uint32_t* dst, int64_t ldd,
                       int64_t words, int64_t prows) {
  pack_across_rows(x, ldx, rows, n, scale, dst, ldd, words, prows);
}
void pairs_transposed(const float* x, int64_t ldx, int64_t rows, int64_t n, uint32_t* dst, int64_t ldd, int64_t cols,
                      int64_t words) {
  pack_transposed(x, ldx, rows, n, dst, ldd, cols, words);
}
void pairs_in_and_across_rows(const float* x, int64_t ldx, int64_t rows, int64_t n, uint32_t* in_rows, int64_t ld_in,
                              int64_t words_in, uint32_t* across, int64_t ld_across, int64_t words_across, int64_t prows,
                              float* sums) {
  pack_in_and_across_rows(x, ldx, rows, n, in_rows, ld_in, words_in, across, ld_across, words_across, prows, sums);
}

#else  // no bf16 kernel in this build: bf16_gemm_usable() is false, so nothing calls these

[[noreturn]] static void missing() { fail("bf16 tiles: this build has no bf16 kernel (check bf16_gemm_usable first)"); }
void tile_gemm(bool, int64_t, int64_t, int64_t, const uint32_t*, int64_t, int64_t, const uint32_t*, int64_t, float*, int64_t) {
  missing();
}
void pairs_in_rows(const float*, int64_t, int64_t, int64_t, float, uint32_t*, int64_t, int64_t, int64_t) { missing(); }
void pairs_across_rows(const float*, int64_t, int64_t, int64_t, float, uint32_t*, int64_t, int64_t, int64_t) { missing(); }
void pairs_transposed(const float*, int64_t, int64_t, int64_t, uint32_t*, int64_t, int64_t, int64_t) { missing(); }
void pairs_in_and_across_rows(const float*, int64_t, int64_t, int64_t, uint32_t*, int64_t, int64_t, uint32_t*, int64_t, int64_t,
                              int64_t, float*) {
  missing();
}

#endif

}  // namespace dl::bf16t
