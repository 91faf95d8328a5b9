// tensor/transpose16.h - a 16 x 16 block of 32-bit words turned over in AVX-512 registers: the bf16 packing of K^T and
// V^T (tensor/bf16_tiles.cpp) and the blocked attention's write-out of dK and dV, which its bf16 products make with a
// key per column (nn/fused/flash_attention.cpp). Internal to those two files: each includes it where it has defined
// DL_BF16_TARGET (bf16_tiles.cpp: the target attribute that lets AVX-512 compile without -march flags; flash_attention.cpp:
// nothing, in a build with AVX-512) and included <immintrin.h>.
#pragma once
#include <cstdint>

namespace dl::simd {

// GCC 12's AVX-512 headers start the unpack and shuffle intrinsics from a self-initialised "undefined" vector and, once
// this is inlined, warn that it is used uninitialised (a false report: the instructions do not read it).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// out[j * ldo + i] = b[i * kStride + j] for i, j < 16. Four rounds of in-lane interleaves and lane shuffles (64
// instructions): 32-bit pairs of rows, then 64-bit, leave lane L of c[g][k] holding column 4 L + k of rows 4 g ..
// 4 g + 3; two rounds of shuffle_i32x4 gather each column's four lanes.
template <int64_t kStride> DL_BF16_TARGET inline void transpose16(const uint32_t* b, uint32_t* out, int64_t ldo) {
  __m512i r[16], t[16];
  for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_si512((const void*)(b + i * kStride));
  for (int i = 0; i < 16; i += 2) t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]), t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  for (int g = 0; g < 4; g++) {  // c[g][k] into r[4 g + k]
    const __m512i* u = t + 4 * g;
    r[4 * g + 0] = _mm512_unpacklo_epi64(u[0], u[2]), r[4 * g + 1] = _mm512_unpackhi_epi64(u[0], u[2]);
    r[4 * g + 2] = _mm512_unpacklo_epi64(u[1], u[3]), r[4 * g + 3] = _mm512_unpackhi_epi64(u[1], u[3]);
  }
  for (int k = 0; k < 4; k++) {
    const __m512i x = _mm512_shuffle_i32x4(r[k], r[4 + k], 0x88), y = _mm512_shuffle_i32x4(r[k], r[4 + k], 0xDD);
    const __m512i z = _mm512_shuffle_i32x4(r[8 + k], r[12 + k], 0x88), w = _mm512_shuffle_i32x4(r[8 + k], r[12 + k], 0xDD);
    _mm512_storeu_si512((void*)(out + k * ldo), _mm512_shuffle_i32x4(x, z, 0x88));         // column k
    _mm512_storeu_si512((void*)(out + (4 + k) * ldo), _mm512_shuffle_i32x4(y, w, 0x88));   // 4 + k
    _mm512_storeu_si512((void*)(out + (8 + k) * ldo), _mm512_shuffle_i32x4(x, z, 0xDD));   // 8 + k
    _mm512_storeu_si512((void*)(out + (12 + k) * ldo), _mm512_shuffle_i32x4(y, w, 0xDD));  // 12 + k
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace dl::simd
