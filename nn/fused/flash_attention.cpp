// nn/fused/flash_attention.cpp - the blocked online-softmax attention primitive (math in the header).
#include "nn/fused/flash_attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "nn/attention/attention_ops.h"  // prefix_lengths
#include "nn/fused/flash_products.h"    // the tile products, float32 and bf16
#include "nn/fused/qkv_attention.h"     // check_packed_qkv
#include "nn/fused/softmax_exp.h"       // the bf16 products' exponential
#include "tensor/backend.h"             // the device primitive
#include "tensor/bf16.h"                // bf16_products_active
#include "tensor/bf16_amx.h"            // TileHold
#include "tensor/bf16_gemm.h"           // bf16_amx_in_use
#include "tensor/microkernel.h"          // DL_WIDE_VECTORS
#include "tensor/nn_kernels.h"           // exp_fast, row_key / row_draw (the dropout hash), lane_sum
#if defined(__AVX512F__)
#include <immintrin.h>
#define DL_BF16_TARGET  // this file is built with AVX-512 where it takes the transpose (no target attribute needed)
#include "tensor/transpose16.h"  // dK and dV from their key-per-column accumulators
#endif

namespace dl::nn {

namespace flash {
bool hardware_rounding_on = true;
bool hardware_rounding() { return hardware_rounding_on; }
}  // namespace flash
bool flash_attention_hardware_rounding(bool on) { return std::exchange(flash::hardware_rounding_on, on); }

namespace {

using namespace flash;  // Dims, the blocks, the products (nn/fused/flash_products.h)
using micro::kV;

constexpr float kPadScore = -1e9f;  // the composed path's fill for padding keys (see qkv_attention.cpp)

// The keys row t may see are s < row_keys(t): all T, causal t + 1, prefix-LM max(P_b, t + 1) (as qkv_attention).
inline int64_t row_keys(int64_t t, int64_t T, bool causal, int64_t prefix_b) {
  if (prefix_b >= 0) return std::max(prefix_b, t + 1);
  return causal ? t + 1 : T;
}

// The packed path's dropout: keep(b, h, t, s) = row_draw(row_key(seed, (b NH + h) T + t), s) >= p 2^32.
struct Drop {
  bool on = false;
  uint64_t seed = 0, thr = 0;
  float r = 1;  // 1 / (1 - p)
};

// s[j] = e^(s[j] - shift) for j < n and 0 for n <= j < nv (nv a whole number of 16-float vectors), returning the sum;
// with dropout on, pm[j] = s[j] M(row, s0 + j) in the same pass (one read of the row instead of three: exponentials,
// the mask, the product). pm may be s itself: then s ends as P M and the sum is still P's. Written as blocks of 16
// lanes: a plain loop over j < n vectorises four vectors at a time and leaves a row's last 0-63 elements to a scalar
// loop - with the causal diagonal's short rows, most of a GPT step's exponentials ran there (perf: exp_fast's scalar
// vcmpltss, 12% of the bf16 step). Whole blocks take no select; the one ragged block masks its lanes.
// The 16 partial sums are one vector value (`Lanes`), so they stay in a register: as a float[16] they went through
// the stack on every block (a store and a reload per 16 exponentials, 28% of the forward's samples), and their tree
// at the end ran as 15 scalar adds. The tree adds in the same order as before (halves, then quarters, ...).
typedef float Lanes __attribute__((vector_size(16 * sizeof(float)), aligned(sizeof(float)), may_alias));
// f over the 16 lanes as a tree in vectors: halves, then quarters, ... (for a sum, the order the partial sums always had)
template <class F> DL_WIDE_VECTORS inline float tree(Lanes v, F f) {
  typedef float L8 __attribute__((vector_size(8 * sizeof(float))));
  typedef float L4 __attribute__((vector_size(4 * sizeof(float))));
  typedef float L2 __attribute__((vector_size(2 * sizeof(float))));
  const L8 a = f(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7), __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15));
  const L4 b = f(__builtin_shufflevector(a, a, 0, 1, 2, 3), __builtin_shufflevector(a, a, 4, 5, 6, 7));
  const L2 c = f(__builtin_shufflevector(b, b, 0, 1), __builtin_shufflevector(b, b, 2, 3));
  return f(c[0], c[1]);
}
constexpr auto vsum = [](auto x, auto y) { return x + y; };
constexpr auto vmax = [](auto x, auto y) { return x < y ? y : x; };  // std::max's rule, lane by lane
// One row's dropout scale M(row, s) = keep ? r : 0 (Drop's rule), from the row's hash key.
struct RowKeep {
  uint32_t key, t;
  float r;
  RowKeep(const Drop& dr, uint64_t row)
      : key(dr.on ? row_key(dr.seed, row) : 0), t(keep_threshold32(dr.thr)), r(keep_scale(dr.thr, dr.r)) {}
  float at(int64_t s) const { return row_draw(key, (uint32_t)s) >= t ? r : 0.f; }
  // keys s .. s + 16, through a local array: with pm possibly s, exp_row's loop writing pm from x stayed scalar
  DL_WIDE_VECTORS Lanes at16(int64_t s) const {
    float keep[16];
    DL_VECTORIZE_WIDE
    for (int j = 0; j < 16; j++) keep[j] = at(s + j);
    return *(const Lanes*)keep;
  }
};
// m[j] = M(row, s0 + j) for j < n
inline void mask_tile_row(const Drop& dr, uint64_t row, int64_t s0, float* m, int64_t n) {
  const RowKeep keep(dr, row);
#pragma omp simd
  for (int64_t j = 0; j < n; j++) m[j] = keep.at(s0 + j);
}

#if defined(__AVX512F__)
// e^(x - shift) on the 16 lanes at x by the bf16 products' exponential, 0 in the lanes j >= left
DL_WIDE_VECTORS inline __m512 exp_short_block(const float* x, float shift, int64_t left) {
  const __m512 e = softmax_exp::exp_short16(_mm512_sub_ps(_mm512_loadu_ps(x), _mm512_set1_ps(shift)));
  return left >= 16 ? e : _mm512_maskz_mov_ps((__mmask16)((1u << left) - 1), e);
}
#endif

// kShort: the bf16 products' exponential (nn/fused/softmax_exp.h) instead of exp_fast.
template <bool kShort>
DL_WIDE_VECTORS __attribute__((always_inline)) inline float exp_row(float* s, float* pm, int64_t n, int64_t nv, float shift,
                                                                    const Drop& dr, uint64_t row, int64_t s0) {
  constexpr int kLanes = 16;
  Lanes lane = {};
  const RowKeep keep(dr, row);
  auto block = [&](int64_t j0, int left) DL_WIDE_VECTORS {  // lanes j < left are keys the row sees
    float* x = s + j0;
    if constexpr (kShort) {
#if defined(__AVX512F__)
      _mm512_storeu_ps(x, exp_short_block(x, shift, left));
#else
      DL_VECTORIZE_WIDE
      for (int j = 0; j < kLanes; j++) x[j] = j < left ? softmax_exp::exp_short(x[j] - shift) : 0.f;
#endif
    } else if (left == kLanes) {
      DL_VECTORIZE_WIDE
      for (int j = 0; j < kLanes; j++) x[j] = exp_fast(x[j] - shift);
    } else {
      DL_VECTORIZE_WIDE
      for (int j = 0; j < kLanes; j++) x[j] = j < left ? exp_fast(x[j] - shift) : 0.f;
    }
    const Lanes e = *(const Lanes*)x;
    lane += e;
    if (dr.on) *(Lanes*)(pm + j0) = keep.at16(s0 + j0) * e;
  };
  int64_t j0 = 0;
  for (; j0 + kLanes <= n; j0 += kLanes) block(j0, kLanes);
  if (j0 < n) block(j0, (int)(n - j0)), j0 += kLanes;
  if (j0 < nv) {  // blocks past the row's keys
    std::fill(s + j0, s + nv, 0.f);
    if (dr.on) std::fill(pm + j0, pm + nv, 0.f);
  }
  return tree(lane, vsum);
}

#if defined(__AVX512BF16__)
// The bf16 forward's exp_row: the same P (M) and the same sum, but taken straight to P's pair words for the P V product
// (Bf16Forward::words) instead of stored as floats for a packing pass to read back and round. Two 16-lane blocks at a
// time become one vector of 16 words by VCVTNE2PS2BF16 (round to nearest even, as float_to_bf16; a denormal becomes 0
// there and stays a denormal word in the software packing, and VDPBF16PS reads a denormal word as 0: the products are
// the same). Words past the row's keys are 0, up to nv rounded up to 32 keys (the row of words is Bc / 2 long).
// A software rounding of 16 lanes here was slower than the packing pass (docs/performance.md, 2026-12-07): the
// instruction is one for 32 floats.
DL_WIDE_VECTORS __attribute__((always_inline)) inline float exp_row_words(const float* s, int64_t n, int64_t nv, float shift,
                                                                          const Drop& dr, uint64_t row, int64_t s0,
                                                                          uint32_t* words) {
  const RowKeep keep(dr, row);
  Lanes lane = {};
  auto value = [&](int64_t j0) DL_WIDE_VECTORS {  // P (M) on keys j0 .. j0 + 16, 0 past n; P summed into lane
    if (j0 >= n) return _mm512_setzero_ps();
    const __m512 e = exp_short_block(s + j0, shift, n - j0);
    lane += (Lanes)e;
    return dr.on ? (__m512)(keep.at16(s0 + j0) * (Lanes)e) : e;
  };
  for (int64_t j0 = 0; j0 < nv; j0 += 32) {
    const __m512 lo = value(j0), hi = value(j0 + 16);
    _mm512_storeu_si512((void*)(words + j0 / 2), (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
  }
  return tree(lane, vsum);
}
#endif

// max_j x[j] over j < n (n >= 1) in 16 lanes held in a register; a row's ragged end is the row's last 16 elements
// again, overlapping the ones already seen (a max does not mind seeing an element twice).
DL_WIDE_VECTORS inline float row_max(const float* x, int64_t n) {
  if (n < 16) {
    float mx = x[0];
    for (int64_t c = 1; c < n; c++) mx = std::max(mx, x[c]);
    return mx;
  }
  Lanes v = *(const Lanes*)x;
  int64_t c = 16;
  for (; c + 16 <= n; c += 16) v = vmax(v, *(const Lanes*)(x + c));
  if (c < n) v = vmax(v, *(const Lanes*)(x + n - 16));
  return tree(v, vmax);
}

struct Problem {
  Dims d;
  const float* qkv;       // (B, T, 3C)
  const float* km;        // (B, T) or null
  const int64_t* prefix;  // (B) or null
  bool causal;
  Drop drop;
  int64_t window = 0;  // > 0: row t sees only the keys with |t - s| <= window (the band), on top of the rules above
  // Row t of sequence b sees the keys lo(t) <= s < hi(b, t): [0, row_keys) cut to the band [t - w, t + w].
  int64_t lo(int64_t t) const { return window > 0 ? std::max<int64_t>(0, t - window) : 0; }
  int64_t hi(int64_t b, int64_t t) const {
    const int64_t n = row_keys(t, d.T, causal, prefix ? prefix[b] : -1);
    return window > 0 ? std::min(n, t + window + 1) : n;
  }
};

// none[t] = 1 where row t's keys [lo, hi) hold no real key (only padding): next[s] = the first real key >= s (T if
// none), so row t has one iff next[lo(t)] < hi(t). Without a mask every row has a real key (its own position at least).
inline void rows_without_keys(const Problem& pr, int64_t b, const float* km, int32_t* next, uint8_t* none) {
  const int64_t T = pr.d.T;
  next[T] = (int32_t)T;
  for (int64_t s = T - 1; s >= 0; s--) next[s] = !km || km[s] != 0.f ? (int32_t)s : next[s + 1];
  for (int64_t t = 0; t < T; t++) none[t] = next[pr.lo(t)] >= pr.hi(b, t);
}

// ---- forward ----------------------------------------------------------------------------------------------------
// Scratch per thread: the products' packed operands (Products::floats), then the algorithm's own tiles.
template <class Products> int64_t forward_floats(const Dims& d) {
  return Products::floats(d) + d.Br * d.HSp + d.Br * kKeyBlock + 4 * d.Br;
}

// One (b, h): writes head h's columns of out (B, T, C) and L (B NH, T).
template <class Products> DL_WIDE_VECTORS void forward_pair(const Problem& pr, int64_t bh, float* out, float* L, float* ws) {
  const Dims& d = pr.d;
  const int64_t b = bh / d.NH, h = bh % d.NH, T = d.T, ld = 3 * d.C, HSp = d.HSp, Br = d.Br, Bc = kKeyBlock;
  const float* Q = pr.qkv + b * T * ld + h * d.HS;
  const float *K = Q + d.C, *V = Q + 2 * d.C;
  const float* km = pr.km ? pr.km + b * T : nullptr;
  Products mul(d, ws);                                    // K^T, V, Q' packed as its products want them
  float* O = ws + Products::floats(d);                    // (Br, HSp): the block's output accumulator
  float* S = O + Br * HSp;                                // (Br, Bc): scores, then P * M
  float *m = S + Br * Bc, *l = m + Br, *alpha = l + Br;   // (Br) each: running max, running sum, rescale factor,
  float* mx = alpha + Br;                                 // and the running max after this tile
  mul.head(K, V, ld);
  const float c = (float)(1.0 / std::sqrt((double)d.HS));
  for (int64_t t0 = 0; t0 < T; t0 += Br) {
    const int64_t rows = std::min(Br, T - t0);
    mul.query(Q, ld, t0, rows, c);
    std::fill(O, O + Br * HSp, 0.f);
    std::fill(m, m + Br, -INFINITY);
    std::fill(l, l + Br, 0.f);
    // the keys the block's rows see: from its first row's lo (whole key blocks) to its last row's hi
    const int64_t reach = pr.hi(b, t0 + rows - 1);
    for (int64_t s0 = pr.lo(t0) / Bc * Bc; s0 < reach; s0 += Bc) {
      const int64_t nb = std::min(Bc, reach - s0), nv = round_up(nb, kV);  // keys the block sees here; whole vectors
      mul.scores(rows, nv, s0, S);  // S = c Q K^T
      // In three passes over the rows, so that the rescale factors are one vector loop: e^(m - m') one row at a time
      // was a scalar exp_fast per row and tile (an eighth of the forward's samples).
      auto keys = [&](int64_t r, int64_t& a, int64_t& n) {  // row t0 + r sees this tile's keys a <= j < n (none if n <= a)
        a = std::clamp(pr.lo(t0 + r) - s0, (int64_t)0, nb), n = std::clamp(pr.hi(b, t0 + r) - s0, (int64_t)0, nb);
      };
      for (int64_t r = 0; r < rows; r++) {  // the masks, and each row's new running max m'
        float* s = S + r * Bc;
        int64_t a, n;
        keys(r, a, n);
        if (n <= a) {  // nothing of this tile is allowed: the row's sums stay as they are
          std::fill(s, s + nv, 0.f);
          mx[r] = m[r];
          continue;
        }
        std::fill(s, s + a, -INFINITY);  // keys before the band: e^-inf = 0 exactly (exp_fast)
        if (km) {
#pragma omp simd
          for (int64_t j = a; j < n; j++) s[j] = km[s0 + j] != 0.f ? s[j] : kPadScore;
        }
        mx[r] = std::max(m[r], row_max(s + a, n - a));
      }
#pragma omp simd
      for (int64_t r = 0; r < rows; r++)  // e^(m - m'): 0 on the row's first tile (m = -inf), 1 where the max stays
        alpha[r] = mx[r] == m[r]         ? 1.f
                   : Products::kShortExp ? softmax_exp::exp_short(m[r] - mx[r])
                                         : exp_fast(m[r] - mx[r]);
      for (int64_t r = 0; r < rows; r++) {  // P = e^(S - m') and the running sums (with dropout the row ends as P M)
        int64_t a, n;
        keys(r, a, n);
        const uint64_t row = bh * T + t0 + r;
        m[r] = mx[r];
#if defined(__AVX512BF16__)
        if constexpr (Products::kWordsP)
          if (mul.words) {  // P M as pair words for P V (the row of words is 0 where it sees no key)
            uint32_t* w = mul.p_words(r);
            if (n > a) l[r] = alpha[r] * l[r] + exp_row_words(S + r * Bc, n, nv, m[r], pr.drop, row, s0, w);
            else std::fill(w, w + round_up(nv, 32) / 2, 0u);
            continue;
          }
#endif
        if (n > a) l[r] = alpha[r] * l[r] + exp_row<Products::kShortExp>(S + r * Bc, S + r * Bc, n, nv, m[r], pr.drop, row, s0);
      }
      for (int64_t r = 0; r < rows; r++)
        if (alpha[r] != 1.f)
#pragma omp simd
          for (int64_t e = 0; e < HSp; e++) O[r * HSp + e] *= alpha[r];
      mul.add_pv(rows, nb, s0, S, O);  // O = alpha O + (P M) V
    }
    for (int64_t r = 0; r < rows; r++) {
      const float inv = 1.f / l[r];
      float* o = out + (b * T + t0 + r) * d.C + h * d.HS;
      for (int64_t e = 0; e < d.HS; e++) o[e] = O[r * HSp + e] * inv;
      L[bh * T + t0 + r] = m[r] + std::log(l[r]);
    }
  }
}

// ---- backward ---------------------------------------------------------------------------------------------------
template <class Products> int64_t backward_floats(const Dims& d) {
  return Products::floats(d) + d.Tq * d.HSp + d.Tq + 2 * kKeyBlock * d.HSp + 3 * d.Br * kKeyBlock + (d.T + 1) +
         (d.T + 3) / 4;  // then rows_without_keys's next (int32) and none (bytes)
}

// One (b, h): writes head h's columns of dqkv (B, T, 3C). out (B, T, C) is the forward's output, dO its gradient.
template <class Products>
DL_WIDE_VECTORS void backward_pair(const Problem& pr, int64_t bh, const float* out, const float* L, const float* dO, float* dqkv,
                                   float* ws) {
  const Dims& d = pr.d;
  const int64_t b = bh / d.NH, h = bh % d.NH, T = d.T, ld = 3 * d.C, HSp = d.HSp, Br = d.Br, Bc = kKeyBlock;
  const float* Q = pr.qkv + b * T * ld + h * d.HS;
  const float *K = Q + d.C, *V = Q + 2 * d.C;
  const float* G = dO + b * T * d.C + h * d.HS;  // dO, leading dimension C
  const float* km = pr.km ? pr.km + b * T : nullptr;
  Products mul(d, ws);                    // c Q, dO, and per key block K, K^T, V^T, packed as its products want them
  float* dQa = ws + Products::floats(d);  // (Tq, HSp): dS K summed over the key blocks
  float* D = dQa + d.Tq * HSp;            // (Tq): D_t = dO_t . O_t
  float* dKa = D + d.Tq;                  // (Bc, HSp), or (HSp, Bc) where Products::kKeysInColumns
  float* dVa = dKa + Bc * HSp;            // the same
  float* P = dVa + Bc * HSp;              // (Br, Bc): P
  float* X = P + Br * Bc;                 // (Br, Bc): dPd, then dS
  float* Mk = X + Br * Bc;                // (Br, Bc): the dropout mask M, then P * M
  int32_t* next = (int32_t*)(Mk + Br * Bc);       // (T + 1)
  uint8_t* none = (uint8_t*)(next + T + 1);       // (T): row t sees no real key
  const float c = (float)(1.0 / std::sqrt((double)d.HS));
  mul.head(Q, ld, G, d.C, c);
  std::fill(dQa, dQa + d.Tq * HSp, 0.f);
  for (int64_t t = 0; t < d.Tq; t++) {  // rows C floats apart: asked for ahead, as pack_rows does (an eighth of the samples)
    const float* o = out + (b * T + t) * d.C + h * d.HS;
    if (t + 4 < T) prefetch_row(o + 4 * d.C, d.HS), prefetch_row(G + (t + 4) * d.C, d.HS);
    D[t] = t < T ? lane_sum<float>(d.HS, [&](int64_t e) { return o[e] * G[t * d.C + e]; }) : 0.f;
  }
  rows_without_keys(pr, b, km, next, none);
  for (int64_t s0 = 0; s0 < T; s0 += Bc) {
    const int64_t ns = std::min(Bc, T - s0);
    mul.keys(K, V, ld, s0, ns);
    std::fill(dKa, dKa + 2 * Bc * HSp, 0.f);  // dKa and dVa
    for (int64_t t0 = 0; t0 < T; t0 += Br) {
      const int64_t rows = std::min(Br, T - t0);
      const int64_t reach = pr.hi(b, t0 + rows - 1);  // the block's last row sees the most keys
      if (reach <= s0) continue;                      // no row of this block reaches key s0 (above the diagonal)
      if (pr.lo(t0) >= s0 + ns) continue;             // the band of its first row starts after this key block
      const int64_t nb = std::min(Bc, reach - s0), nv = round_up(nb, kV);  // keys the block sees here; whole vectors
      mul.scores(t0, rows, nv, P);  // S = c Q K^T
      for (int64_t r = 0; r < rows; r++) {  // P = e^(S - L) and P * M
        float *p = P + r * Bc, *pm = Mk + r * Bc;
        const int64_t t = t0 + r, lo = pr.lo(t), hi = pr.hi(b, t);
        const int64_t a = std::clamp(lo - s0, (int64_t)0, nb), n = std::clamp(hi - s0, (int64_t)0, nb);  // lo < hi: a <= n
        const float Lt = L[bh * T + t];
        if (none[t]) {  // no real key: uniform over the row's keys, as the forward's fill gives
          for (int64_t j = 0; j < nv; j++) p[j] = j >= a && j < n ? 1.f / (float)(hi - lo) : 0.f;
        } else {
          std::fill(p, p + a, -INFINITY);  // keys before the band: P = 0
          if (km) {
#pragma omp simd
            for (int64_t j = a; j < n; j++) p[j] = km[s0 + j] != 0.f ? p[j] : kPadScore;
          }
          exp_row<Products::kShortExp>(p, pm, n, nv, Lt, pr.drop, bh * T + t, s0);  // P, and P M with dropout
        }
        if (pr.drop.on && none[t]) {
          mask_tile_row(pr.drop, bh * T + t, s0, pm, n);
#pragma omp simd
          for (int64_t j = 0; j < n; j++) pm[j] *= p[j];
          std::fill(pm + n, pm + nv, 0.f);
        }
      }
      const float* Pd = pr.drop.on ? Mk : P;
      mul.add_dv(t0, rows, nb, Pd, dVa);    // dV += Pd^T dO
      mul.dpd(t0, rows, nv, X);             // X = dPd = dO V^T
      for (int64_t r = 0; r < rows; r++) {  // dP = dPd M;  dS = P (dP - D)
        float *x = X + r * Bc, *p = P + r * Bc, *pm = Mk + r * Bc;
        const int64_t t = t0 + r, n = std::clamp(pr.hi(b, t) - s0, (int64_t)0, nb);  // P = 0 before the band
        if (none[t]) {  // all keys padding: dS = 0 (the fill does not depend on S)
          std::fill(x, x + nv, 0.f);
          continue;
        }
        const float Dt = D[t];
        // dS in 16-lane blocks as exp_row (short rows stay in vectors); the ragged block masks, later blocks are 0
        // As Lanes values: written as a 16-step loop, clang unrolled it fully before vectorising and then left 16
        // scalar lanes (it could not show that x and p do not overlap); a third of the backward's samples.
        auto ds = [&](int64_t j0, int left) DL_WIDE_VECTORS {
          Lanes& xc = *(Lanes*)(x + j0);
          const Lanes pc = *(const Lanes*)(p + j0);
          if (pr.drop.on) xc = *(const Lanes*)(pm + j0) * xc - pc * Dt;  // pm = P M, so P dP = pm dPd
          else xc = pc * (xc - Dt);
          if (left < 16) std::fill(x + j0 + left, x + j0 + 16, 0.f);  // the tiles are Bc wide: the lanes exist
        };
        int64_t j0 = 0;
        for (; j0 + 16 <= n; j0 += 16) ds(j0, 16);
        if (j0 < n) ds(j0, (int)(n - j0)), j0 += 16;
        if (j0 < nv) std::fill(x + j0, x + nv, 0.f);
      }
      mul.add_dq_dk(t0, rows, nb, X, dQa + t0 * HSp, dKa);  // dQ += dS K (times c below), dK += dS^T (c Q)
    }
    // key s, dim e of dKa / dVa at s ks + e es: a key per row (Bc, HSp), or per column (HSp, Bc)
    constexpr bool cols = Products::kKeysInColumns;
    const int64_t ks = cols ? 1 : HSp, es = cols ? Bc : 1;
    float* dk0 = dqkv + (b * T + s0) * ld + d.C + h * d.HS;  // key s0's dK; its dV C floats on
    int64_t s = 0;
#if defined(__AVX512F__)
    if (cols && d.HS % 16 == 0)  // 16 keys x 16 dims at a time turned over in registers (a strided read per element
      for (; s + 16 <= ns; s += 16)  // was about 1% of the bf16 Transformer step's samples)
        for (int64_t e = 0; e < d.HS; e += 16) {
          simd::transpose16<kKeyBlock>((const uint32_t*)(dKa + e * Bc + s), (uint32_t*)(dk0 + s * ld + e), ld);
          simd::transpose16<kKeyBlock>((const uint32_t*)(dVa + e * Bc + s), (uint32_t*)(dk0 + s * ld + d.C + e), ld);
        }
#endif
    for (; s < ns; s++) {
      float* dk = dk0 + s * ld;
      for (int64_t e = 0; e < d.HS; e++) dk[e] = dKa[s * ks + e * es], dk[d.C + e] = dVa[s * ks + e * es];
    }
  }
  for (int64_t t = 0; t < T; t++) {
    float* dq = dqkv + (b * T + t) * ld + h * d.HS;
    for (int64_t e = 0; e < d.HS; e++) dq[e] = c * dQa[t * HSp + e];
  }
}

// Runs f(bh, thread scratch) over the B NH pairs: one pair on one thread from start to end, so the bits do not depend
// on which thread takes a pair. Handed out one at a time (dynamic): in halves (static), one thread's half finished
// measurably later on the Intel VM (kernel fwd + bwd at T 512, B 32, 4 heads, bf16 52.3-54.4 -> 50.0-51.1 ms).
template <class F> void over_pairs(const Dims& d, int64_t floats, F&& f) {
  const int nt = omp_get_max_threads();
  Tensor scratch = Tensor::empty({nt, floats});  // from the caching allocator: no fresh pages per step
  float* base = scratch.data<float>();
#pragma omp parallel num_threads(nt)
  {
    float* mine = base + omp_get_thread_num() * floats;
    amx::TileHold tiles;  // the bf16 products on AMX configure the tiles once per thread, not per product
#pragma omp for schedule(dynamic)
    for (int64_t bh = 0; bh < d.B * d.NH; bh++) f(bh, mine);
  }
}

// The forward and the backward of all pairs, on the float32 or the bf16 products (nn/fused/flash_products.h).
void forward_all(const Problem& pr, bool bf16, float* out, float* L) {
  if (bf16)
    over_pairs(pr.d, forward_floats<Bf16Forward>(pr.d),
               [&](int64_t bh, float* ws) { forward_pair<Bf16Forward>(pr, bh, out, L, ws); });
  else
    over_pairs(pr.d, forward_floats<F32Forward>(pr.d),
               [&](int64_t bh, float* ws) { forward_pair<F32Forward>(pr, bh, out, L, ws); });
}
void backward_all(const Problem& pr, bool bf16, const float* out, const float* L, const float* dO, float* dqkv) {
  if (bf16)
    over_pairs(pr.d, backward_floats<Bf16Backward>(pr.d),
               [&](int64_t bh, float* ws) { backward_pair<Bf16Backward>(pr, bh, out, L, dO, dqkv, ws); });
  else
    over_pairs(pr.d, backward_floats<F32Backward>(pr.d),
               [&](int64_t bh, float* ws) { backward_pair<F32Backward>(pr, bh, out, L, dO, dqkv, ws); });
}

struct FlashAttentionNode : Node {
  Tensor qkv, out, L, key_mask;  // qkv (B, T, 3C), out (B, T, C), L (B, NH, T), key_mask (B, T) f32 or undefined
  std::vector<int64_t> prefix;   // (B) or empty
  Dims d{};
  bool causal = false;
  bool bf16 = false;  // the forward's products were bf16: the backward's are too
  Drop drop;
  int64_t window = 0;
  const char* name() const override { return "flash_attention"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    if (!qkv.defined()) fail("flash_attention: backward called twice without retain_graph");
    Tensor g = dy.to(DType::f32).contiguous();
    Tensor dqkv = Tensor::empty(qkv.shape());
    Problem pr{d, qkv.data<float>(), key_mask.defined() ? key_mask.data<float>() : nullptr,
               prefix.empty() ? nullptr : prefix.data(), causal, drop, window};
    const float *po = out.data<float>(), *pl = L.data<float>(), *pg = g.data<float>();
    float* pd = dqkv.data<float>();
    backward_all(pr, bf16, po, pl, pg, pd);
    return {dqkv};
  }
  void release() override { qkv = out = L = key_mask = Tensor(); }
};

// ---- on a device: the backend's primitive (cuda/ops/attention.cuh), the same map and the same dropout draw ----
struct DeviceFlashNode : Node {
  Tensor qkv, out, L, key_mask, prefix;  // on the device; key_mask (B, T) f32 and prefix (B) i64 or undefined
  AttentionArgs args;
  const char* name() const override { return "flash_attention"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    if (!qkv.defined()) fail("flash_attention: backward called twice without retain_graph");
    Tensor dqkv = Tensor::empty(qkv.shape(), DType::f32, qkv.device());
    require_backend(qkv.device(), "flash_attention")
        .attention_backward(args, qkv, key_mask, prefix, out, L, dy.to(DType::f32).contiguous(), dqkv);
    return {dqkv};
  }
  void release() override { qkv = out = L = key_mask = prefix = Tensor(); }
};

Var flash_attention_device(const Var& qkv, const AttentionArgs& a, const Tensor& key_mask, const std::vector<int64_t>& P) {
  const Device dev = qkv.data().device();
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3;
  Tensor x = qkv.data().contiguous();
  Tensor km = key_mask.defined() ? key_mask.to(DType::f32).to(dev).contiguous() : Tensor();
  Tensor pd = P.empty() ? Tensor() : from_vector(P, {B}).to(dev);
  Tensor out = Tensor::empty({B, T, C}, DType::f32, dev), L = Tensor::empty({B, a.heads, T}, DType::f32, dev);
  require_backend(dev, "flash_attention").attention(a, x, km, pd, out, L);
  if (!any_requires_grad({qkv})) return Var(out);
  auto n = std::make_shared<DeviceFlashNode>();
  n->qkv = x, n->out = out, n->L = L, n->key_mask = km, n->prefix = pd, n->args = a;
  return record(n, out, {qkv});
}

}  // namespace

Var flash_attention(const Var& qkv, int64_t heads, bool causal, double p, bool training, Generator& g, const Tensor& key_mask,
                    const Tensor& prefix, int64_t window) {
  check_packed_qkv("flash_attention", qkv, heads, p, /*any_device=*/true);
  if (window < 0) fail("flash_attention: window must be 0 (none) or positive, found " + std::to_string(window));
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, HS = C / heads;
  const bool bf16 = qkv.data().device() == Device::cpu && bf16_products_active();  // Precision::bf16 where this CPU
  const int64_t Br = bf16 && bf16_amx_in_use() ? kQueryBlockAmx : kQueryBlock;      // computes in bf16 (tensor/bf16.h)
  Dims d{B, T, C, heads, HS, round_up(HS, 16), round_up(T, Br), round_up(T, kKeyBlock), Br};
  if (key_mask.defined() && key_mask.shape() != Shape{B, T})
    fail("flash_attention: key_mask shape mismatch: expected (B, T) = " + shape_str({B, T}) + ", found " +
         shape_str(key_mask.shape()));
  std::vector<int64_t> P =
      prefix.defined() ? prefix_lengths(prefix.to(Device::cpu), B, T, "flash_attention") : std::vector<int64_t>();
  Drop dr;
  dr.on = training && p > 0;
  dr.seed = dr.on ? g.next_u64() : 0;  // the draw qkv_attention makes, so both give the same mask
  dr.thr = (uint64_t)std::llround(p * 4294967296.0);
  dr.r = p < 1 ? (float)(1.0 / (1.0 - p)) : 0.f;
  if (qkv.data().device() != Device::cpu) {
    if (HS > kDeviceFlashMaxHead)
      fail("flash_attention: head size " + std::to_string(HS) + " is above the device kernel's " +
           std::to_string(kDeviceFlashMaxHead) + " (use the composed attention)");
    AttentionArgs a;
    a.heads = heads, a.window = window, a.causal = causal, a.dropout = dr.on, a.seed = dr.seed, a.thr = dr.thr, a.r = dr.r;
    return flash_attention_device(qkv, a, key_mask, P);
  }
  Tensor km = key_mask.defined() ? key_mask.to(DType::f32).contiguous() : Tensor();
  Tensor x = qkv.data().contiguous();
  Tensor out = Tensor::empty({B, T, C}), L = Tensor::empty({B, heads, T});
  Problem pr{d, x.data<float>(), km.defined() ? km.data<float>() : nullptr, P.empty() ? nullptr : P.data(), causal, dr, window};
  float *po = out.data<float>(), *pl = L.data<float>();
  forward_all(pr, bf16, po, pl);
  if (!any_requires_grad({qkv})) return Var(out);
  auto n = std::make_shared<FlashAttentionNode>();
  n->qkv = x, n->out = out, n->L = L, n->key_mask = km, n->d = d, n->causal = causal, n->bf16 = bf16;
  n->drop = dr, n->prefix = P, n->window = window;
  return record(n, out, {qkv});
}

}  // namespace dl::nn
