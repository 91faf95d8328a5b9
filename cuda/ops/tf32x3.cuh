// cuda/ops/tf32x3.cuh - float32 tile products on tensor cores, "3xTF32": C += A B for a 16 x 8 tile of A and an 8 x 16
// tile of B, warp-wide (nvcuda::wmma, m16n16k8, sm_80 and later), to about float32's accuracy.
//
// A tensor core multiplies TF32 numbers: float32's 8 exponent bits with 10 mantissa bits instead of 23. Each float x is
// split into big = tf32(x) and small = tf32(x - big) (round to nearest, ties away from zero: cvt.rna), so x = big +
// small to about 2^-22 relative, and
//     a b  ~  a_small b_big + a_big b_small + a_big b_big       (a_small b_small, about 2^-22 of the product, dropped)
// three tensor-core products with float32 sums, smallest terms first. This is what PyTorch's float32
// scaled_dot_product_attention does on an A100 or H100 (CUTLASS's OpMultiplyAddFastF32 in its memory-efficient kernel),
// and what keeps "float32" meaning float32 here: one TF32 product alone has errors near 1e-3 relative.
//
// The fragments' layout across the 32 lanes is the hardware's and is not used: tiles go in and out through memory
// (load / store, a row stride `ld` that is a multiple of 4 floats, a base on a 32-byte boundary). That is what lets
// the host twin stand in: off the GPU a fragment is the whole tile, the split rounds the same way, and a product adds
// the 8 terms of each entry in order (the hardware's order and internal rounding differ: agreement is to float32
// tolerance, not to the bit).
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "cuda/ops/common.cuh"
#if defined(__CUDACC__)
#include <mma.h>
#endif

namespace dl::ops::tf32x3 {

struct Row {};  // element (i, j) of a tile at p[i * ld + j]
struct Col {};  // element (i, j) at p[j * ld + i]: a row-major tile read as its transpose

#if defined(__CUDA_ARCH__)
namespace wm = nvcuda::wmma;
template <class L> using wl = std::conditional_t<std::is_same_v<L, Row>, wm::row_major, wm::col_major>;
template <class L> struct A {  // 16 x 8
  wm::fragment<wm::matrix_a, 16, 16, 8, wm::precision::tf32, wl<L>> big, small;
};
template <class L> struct B {  // 8 x 16
  wm::fragment<wm::matrix_b, 16, 16, 8, wm::precision::tf32, wl<L>> big, small;
};
struct Acc {  // 16 x 16, float32
  wm::fragment<wm::accumulator, 16, 16, 8, float> c;
};
template <class F> __device__ inline void split(F& big, F& small) {
  for (int i = 0; i < big.num_elements; i++) {
    const float x = big.x[i];
    big.x[i] = wm::__float_to_tf32(x);
    small.x[i] = wm::__float_to_tf32(x - big.x[i]);
  }
}
template <class L> __device__ inline void load(A<L>& a, const float* p, int ld) {
  wm::load_matrix_sync(a.big, p, (unsigned)ld);
  split(a.big, a.small);
}
template <class L> __device__ inline void load(B<L>& b, const float* p, int ld) {
  wm::load_matrix_sync(b.big, p, (unsigned)ld);
  split(b.big, b.small);
}
__device__ inline void zero(Acc& d) { wm::fill_fragment(d.c, 0.f); }
template <class La, class Lb> __device__ inline void mma(Acc& d, const A<La>& a, const B<Lb>& b) {
  wm::mma_sync(d.c, a.small, b.big, d.c);
  wm::mma_sync(d.c, a.big, b.small, d.c);
  wm::mma_sync(d.c, a.big, b.big, d.c);
}
__device__ inline void store(float* p, const Acc& d, int ld) { wm::store_matrix_sync(p, d.c, (unsigned)ld, wm::mem_row_major); }

#else  // the host twin: a fragment is the whole tile

// What wmma::load_matrix_sync / store_matrix_sync require of their arguments (a base on a 256-bit boundary, a row
// stride a multiple of 16 bytes for 32-bit elements), checked here because the GPU does not say: there a misaligned
// base is undefined behaviour (a fault, or a tile read from the wrong place).
inline void check_tile_address(const float* p, int ld, const char* what) {
  if (reinterpret_cast<uintptr_t>(p) % 32 || ld % 4 || ld <= 0)
    fail(std::string("tf32x3::") + what + ": a tile at " + std::to_string(reinterpret_cast<uintptr_t>(p)) + " with row stride " +
         std::to_string(ld) +
         " floats: a tensor-core load or store needs a base on a 32-byte boundary and a stride a multiple of 4");
}
inline float to_tf32(float x) {  // cvt.rna.tf32.f32: keep 10 mantissa bits, round to nearest, ties away from zero
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;  // inf and NaN pass as they are
  std::memcpy(&x, &u, 4);
  return x;
}
template <int R, int C> struct Tile {
  float big[R * C], small[R * C];  // (i, j) at i * C + j
  template <class L> void load(const float* p, int ld) {
    check_tile_address(p, ld, "load");
    for (int i = 0; i < R; i++)
      for (int j = 0; j < C; j++) {
        const float x = std::is_same_v<L, Row> ? p[i * ld + j] : p[j * ld + i];
        big[i * C + j] = to_tf32(x), small[i * C + j] = to_tf32(x - big[i * C + j]);
      }
  }
};
template <class L> struct A : Tile<16, 8> {};
template <class L> struct B : Tile<8, 16> {};
struct Acc {
  float c[256];
};
template <class L> inline void load(A<L>& a, const float* p, int ld) { a.template load<L>(p, ld); }
template <class L> inline void load(B<L>& b, const float* p, int ld) { b.template load<L>(p, ld); }
inline void zero(Acc& d) {
  for (float& x : d.c) x = 0.f;
}
inline void mma1(Acc& d, const float* a, const float* b) {  // one tensor-core product: d += a b, a 16 x 8, b 8 x 16
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) {
      float s = d.c[i * 16 + j];
      for (int k = 0; k < 8; k++) s += a[i * 8 + k] * b[k * 16 + j];
      d.c[i * 16 + j] = s;
    }
}
template <class La, class Lb> inline void mma(Acc& d, const A<La>& a, const B<Lb>& b) {
  mma1(d, a.small, b.big), mma1(d, a.big, b.small), mma1(d, a.big, b.big);
}
inline void store(float* p, const Acc& d, int ld) {
  check_tile_address(p, ld, "store");
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) p[i * ld + j] = d.c[i * 16 + j];
}
#endif

}  // namespace dl::ops::tf32x3
