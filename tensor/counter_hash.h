// tensor/counter_hash.h - the counter-based random draws of the dropout masks (tensor/nn_kernels.h's dropout, the
// attention primitives' dropout on the weights), written once for the host and the device: nvcc compiles them as
// __host__ __device__ functions (cuda/ops/), every other compiler as plain inline C++.
//
// Element j of row `row` draws u = mix32(row_key(seed, row) ^ j * 0x9E3779B9), a uniform 32-bit value: any draw can be
// computed on its own (in any order, on any thread, again in a backward) and the loops over j vectorise.
#pragma once
#include <cstdint>

// A function callable from host and device code; plain C++ when the compiler is not nvcc.
#ifndef DL_HD
#ifdef __CUDACC__
#define DL_HD __host__ __device__
#else
#define DL_HD
#endif
#endif

namespace dl {

DL_HD inline uint32_t row_key(uint64_t seed, uint64_t row) {  // splitmix64 of (seed, row), folded to 32 bits
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (row + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (uint32_t)(z ^ (z >> 31));
}
DL_HD inline uint32_t mix32(uint32_t x) {  // "lowbias32" (C. Wellons): a full-avalanche 32-bit mixer
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}
DL_HD inline uint32_t row_draw(uint32_t key, uint32_t j) { return mix32(key ^ (j * 0x9E3779B9U)); }

// The keep test `draw >= thr` (thr = round(p 2^32), in [0, 2^32]) as a 32-bit compare: a 64-bit one widens every lane
// and halves the vector. thr = 2^32 keeps nothing, so a caller compares against keep_threshold32(thr) and gives a kept
// element keep_scale(thr, r) instead of r: both are 0 only in that case, so the mask is the 64-bit test's exactly.
DL_HD inline uint32_t keep_threshold32(uint64_t thr) { return thr > 0xFFFFFFFFull ? 0xFFFFFFFFu : (uint32_t)thr; }
DL_HD inline float keep_scale(uint64_t thr, float r) { return thr > 0xFFFFFFFFull ? 0.f : r; }

}  // namespace dl
