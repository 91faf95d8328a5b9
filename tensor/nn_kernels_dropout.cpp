// tensor/nn_kernels_dropout.cpp - dropout's CPU kernels: the keep bits drawn from the counter hash
// (tensor/counter_hash.h), the float mask, and the one-pass apply the dropout op runs (declarations and the
// mask's definition in tensor/nn_kernels.h).
#include <algorithm>
#include <cmath>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "tensor/backend.h"
#include "tensor/elementwise.h"
#include "tensor/nn_kernels.h"

namespace dl {

// The draws live in dropout_keep_bits; the float mask is those bits expanded to 0 and 1/(1-p).
// Part of the mask's definition: row k of the draws is elements k*4096 ..; 64 whole words per row, so threads
// never share a word.
namespace {
constexpr int64_t kDropoutRow = 4096;
uint64_t dropout_threshold(double p) {
  if (!(p >= 0.0 && p <= 1.0)) fail("dropout: p must be in [0, 1], got " + std::to_string(p));
  return (uint64_t)std::llround(p * 4294967296.0);  // kept when the 32-bit draw is >= thr
}
double dropout_scale(double p) { return p < 1.0 ? 1.0 / (1.0 - p) : 0.0; }  // what a kept element is multiplied by
// The keep bits of elements j0 .. j0 + len (len <= 32) of a draw row with this key: bit j set = element j0 + j kept.
// All 32 draws are made (the ones past len are masked off): a fixed-length loop vectorises, and the compare is 32-bit
// (keep_threshold32). A plain loop over the bits with a 64-bit compare stayed scalar, 5x the pass's memory time.
inline uint32_t draw_half_word(uint32_t key, int64_t j0, int64_t len, uint64_t thr) {
  if (thr > 0xFFFFFFFFull) return 0;  // p = 1 (or rounds to it): nothing kept
  const uint32_t t = keep_threshold32(thr);
  uint32_t d[32];
#pragma omp simd
  for (int j = 0; j < 32; j++) d[j] = row_draw(key, (uint32_t)(j0 + j));
  uint32_t b = 0;
#if defined(__AVX512F__)
  b = (uint32_t)_mm512_cmpge_epu32_mask(_mm512_loadu_si512(d), _mm512_set1_epi32((int)t)) |
      (uint32_t)_mm512_cmpge_epu32_mask(_mm512_loadu_si512(d + 16), _mm512_set1_epi32((int)t)) << 16;
#else
#pragma omp simd reduction(| : b)
  for (int j = 0; j < 32; j++) b |= (uint32_t)(d[j] >= t) << j;
#endif
  return len >= 32 ? b : b & ((1u << len) - 1);
}
}  // namespace

Tensor dropout_mask(const Shape& shape, double p, Generator& g, DType dtype, Device device) {
  if (device != Device::cpu) {  // the device seam: the same counter-based draws from the same base u64
    if (!(p >= 0.0 && p <= 1.0)) fail("dropout: p must be in [0, 1], got " + std::to_string(p));
    Tensor m = Tensor::empty(shape, dtype, device);
    uint64_t base = g.next_u64();
    if (m.numel() > 0) require_backend(device, "dropout").dropout_mask(base, p, m);
    return m;
  }
  Tensor m = Tensor::empty(shape, dtype);
  const int64_t n = m.numel();
  const std::vector<uint64_t> bits = dropout_keep_bits(n, p, g);
  const double scale = dropout_scale(p);
  dispatch_float(dtype, "dropout", [&]<class T>() {
    T* pm = m.data<T>();
    const T keep = (T)scale;
    parallel_for(n, 4096, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; i++) pm[i] = (bits[i / 64] >> (i % 64)) & 1 ? keep : (T)0;
    });
  });
  return m;
}

std::vector<uint64_t> dropout_keep_bits(int64_t n, double p, Generator& g) {
  const uint64_t thr = dropout_threshold(p);
  std::vector<uint64_t> bits((n + 63) / 64, 0);
  uint64_t base = g.next_u64();
  int64_t nch = (n + kDropoutRow - 1) / kDropoutRow;
  parallel_for(nch, 4, [&](int64_t c0, int64_t c1) {
    for (int64_t k = c0; k < c1; k++) {
      const uint32_t key = row_key(base, (uint64_t)k);
      const int64_t i0 = k * kDropoutRow, m = std::min(n - i0, kDropoutRow);
      for (int64_t j0 = 0; j0 < m; j0 += 32)  // 32 elements per half word
        bits[(i0 + j0) / 64] |= (uint64_t)draw_half_word(key, j0, std::min<int64_t>(32, m - j0), thr) << ((i0 + j0) % 64);
    }
  });
  return bits;
}

namespace {
// y[j] = x[j] * (bit j of b ? s : 0) for j < m <= 32: x * mask as the float mask would give it (a NaN or an infinity
// that is dropped stays NaN, as in x * 0). Whole words vectorise (a per-lane variable shift and a blend); in place
// (x == y) through one pointer: with two that might overlap, clang took a scalar copy of the loop (3% of a bf16
// Transformer step, the fused feed-forward's mask).
template <class T> inline void apply_half_word(const T* x, T* y, uint32_t b, int64_t m, T s) {
  if (m == 32 && x == y) {
#pragma omp simd
    for (int j = 0; j < 32; j++) y[j] = y[j] * (((b >> j) & 1u) ? s : (T)0);
  } else if (m == 32) {
#pragma omp simd
    for (int j = 0; j < 32; j++) y[j] = x[j] * (((b >> j) & 1u) ? s : (T)0);
  } else {
    for (int64_t j = 0; j < m; j++) y[j] = x[j] * (((b >> j) & 1u) ? s : (T)0);
  }
}
}  // namespace

Tensor apply_dropout_bits(const Tensor& x, const std::vector<uint64_t>& bits, double p) {
  require_cpu_float(x, "dropout");
  if (!x.is_contiguous()) fail("dropout: apply_dropout_bits needs a contiguous tensor");
  const int64_t n = x.numel();
  if ((int64_t)bits.size() * 64 < n)
    fail("dropout: " + std::to_string(bits.size()) + " mask words for " + std::to_string(n) + " elements");
  const double scale = dropout_scale(p);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_float(x.dtype(), "dropout", [&]<class T>() {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const T s = (T)scale;
    parallel_for((n + 63) / 64, 256, [&](int64_t w0, int64_t w1) {
      for (int64_t w = w0; w < w1; w++)
        for (int64_t half = 0; half < 2; half++) {  // 32-bit halves: the per-lane variable shift vectorises
          const int64_t i0 = w * 64 + 32 * half;
          apply_half_word(px + i0, py + i0, (uint32_t)(bits[w] >> (32 * half)), std::clamp<int64_t>(n - i0, 0, 32), s);
        }
    });
  });
  return y;
}

void apply_dropout_bits_block(const float* x, float* y, const uint64_t* bits, int64_t e0, int64_t n, double p) {
  const float s = (float)dropout_scale(p);
  for (int64_t i = 0; i < n;) {  // by the mask's 32-bit half words, as apply_dropout_bits takes them
    const int64_t e = e0 + i, m = std::min(n - i, 32 - e % 32);  // the rest of e's half word: within one 64-bit word
    apply_half_word(x + i, y + i, (uint32_t)(bits[e / 64] >> (e % 64)), m, s);
    i += m;
  }
}

DropoutOut dropout_one_pass(const Tensor& x, double p, Generator& g) {
  require_cpu_float(x, "dropout");
  if (!x.is_contiguous()) fail("dropout: dropout_one_pass needs a contiguous tensor");
  const uint64_t thr = dropout_threshold(p);
  const int64_t n = x.numel();
  DropoutOut o{Tensor::empty(x.shape(), x.dtype()), std::vector<uint64_t>((n + 63) / 64)};
  const uint64_t base = g.next_u64();  // the one draw dropout_keep_bits makes
  const double scale = dropout_scale(p);
  dispatch_float(x.dtype(), "dropout", [&]<class T>() {
    const T* px = x.data<T>();
    T* py = o.y.data<T>();
    uint64_t* bits = o.bits.data();
    const T s = (T)scale;
    parallel_for((n + kDropoutRow - 1) / kDropoutRow, 4, [&](int64_t c0, int64_t c1) {
      for (int64_t k = c0; k < c1; k++) {
        const uint32_t key = row_key(base, (uint64_t)k);
        const int64_t i0 = k * kDropoutRow, m = std::min(n - i0, kDropoutRow);
        for (int64_t j0 = 0; j0 < m; j0 += 32) {  // half a word: draw 32 keep bits, then apply them while in cache
          const int64_t len = std::min<int64_t>(32, m - j0);
          const uint32_t b = draw_half_word(key, j0, len, thr);
          bits[(i0 + j0) / 64] |= (uint64_t)b << ((i0 + j0) % 64);  // the vector starts zeroed
          apply_half_word(px + i0 + j0, py + i0 + j0, b, len, s);
        }
      }
    });
  });
  return o;
}

}  // namespace dl
