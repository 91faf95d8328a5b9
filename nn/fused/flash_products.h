// nn/fused/flash_products.h - the tile products of the blocked attention (nn/fused/flash_attention.cpp), in float32 and
// in bfloat16: the algorithm (online softmax, masks, dropout) is written once there, templated on one of these.
// Internal to flash_attention.cpp; shape letters as in flash_attention.h (Br x Bc tiles, HSp = HS rounded up to 16).
//
// The products, per (b, h), with Q' = c Q:
//   forward    S = Q'_i K_j^T  (K = HS)            O_i += P V_j  (K = the block's keys)
//   backward   S = Q'_i K_j^T,  dPd = dO_i V_j^T  (K = HS)
//              dV_j += Pd^T dO_i,  dK_j += dS^T Q'_i  (K = the block's query rows)      dQ_i += dS K_j  (K = keys)
//              (the bf16 products compute dV_j^T += dO_i^T Pd and dK_j^T += Q'_i^T dS instead: Bf16Backward says why)
// Each policy owns the packed copies of its operands (carved from the thread's scratch) and packs them as early as
// they allow: per (b, h) what is reused across blocks, per block or tile the rest.
//
// F32Forward / F32Backward: float32 copies, tensor/microkernel.h's FMA register tiles (the path's original products).
// Bf16Forward / Bf16Backward (taken when Precision::bf16 and bf16_gemm_usable(), as PyTorch's autocast runs attention's
// bmm in bf16): every operand of every product above is rounded to bf16 (nearest even) and the sums are float32, on
// tensor/bf16_tiles.h's VDPBF16PS tiles. Rounded, and when:
//   once per (b, h)          forward: K^T and V (all key blocks);  backward: Q' and dO (each in the two pair layouts
//                            its two products need)
//   once per key block       backward: K_j, K_j^T, V_j^T (each key block is visited once: key blocks are the outer loop)
//   once per query block     forward: Q'_i (Q' = c Q in float32, then rounded)
//   once per tile            P (forward P V; with dropout P M), Pd (backward dV), dS (backward dQ and dK): where the
//                            build has AVX512_BF16, by VCVTNE2PS2BF16 (ne:: below; P's words straight from the
//                            exponentials' pass, flash_attention.cpp's exp_row_words), else by bf16t's packings
// Not rounded: the scores S and everything computed from them in float32 - the softmax statistics m and l (so l sums
// the float32 P, not the rounded one), L, D = dO . O (from the float32 dO and output), the output accumulator O, the
// dQ / dK / dV accumulators and every sum. The exponentials are nn/fused/softmax_exp.h's (kShortExp): relative error
// below 1e-5 where P is then rounded to 2^-8.
#pragma once
#include <algorithm>
#include <cstdint>

#include "tensor/bf16_tiles.h"
#include "tensor/microkernel.h"  // micro::gemm
#if defined(__AVX512BF16__)
#include <immintrin.h>
#endif

namespace dl::nn::flash {

// Br x Bc: a score tile (48 x 128 floats, 24 KB) and the q, k, v, o tiles of a head of 32 (6-16 KB each) stay in L1
// and L2. Br is a multiple of the kernels' 6 and 12 rows (and even: the bf16 pairs of query rows never cross a
// block), Bc of their 64 columns. Swept on one thread at T = 2048 and 4096 (24-144 x 64-512): within 10% from
// 48 x 128 to 48 x 512; 48 x 128 is the best for the backward.
// With the bf16 products on AMX the query block is 64 rows instead: the transposed products (dV += Pd^T dO,
// dK += dS^T Q') then reduce over 32 pairs of query rows, two whole tiles, where 24 pairs left a zero-padded copy of
// the last half tile on every call, and the scores' 64 rows are two 32-row tile blocks where 48 left a 16-row one.
// On the Intel Xeon with AMX (family 6 model 167, 2 threads; bench_workloads kernels, T = 512, B = 32, 4 heads of 32)
// the forward and backward went 54.3-55.5 -> 51.3-52.5 ms. Where the bf16 products run on VDPBF16PS the block stays
// 48 rows, so those machines keep their bits. Both are even: the bf16 pairs of query rows never cross a block.
constexpr int64_t kQueryBlock = 48, kQueryBlockAmx = 64, kKeyBlock = 128;
constexpr int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

struct Dims {
  int64_t B, T, C, NH, HS;
  int64_t HSp;     // HS rounded up to 16: tiles are zero-padded to whole vectors
  int64_t Tq, Tk;  // T rounded up to whole query / key blocks
  int64_t Br;      // rows of a query block: kQueryBlock, or kQueryBlockAmx for the bf16 products on AMX
};

// Copies rows t0 .. t0 + n of one head's slice of x (leading dimension ld) into dst (rows, HSp) times `scale`,
// zero-padded up to `rows` rows and HSp columns.
// The rows are `ld` floats apart in qkv (a head's HS floats of a 3C row), so the loop is over whole rows with no
// per-element condition; the row read ahead is asked for early (a head's rows are 3C floats apart: the hardware
// prefetcher does not run ahead of such a walk).
inline void prefetch_row(const float* s, int64_t HS) {  // its first and last cache line (HS <= 32: one or two)
  __builtin_prefetch(s);
  __builtin_prefetch(s + HS - 1);
}
inline void pack_rows(const float* x, int64_t ld, int64_t t0, int64_t n, int64_t rows, const Dims& d, float scale, float* dst) {
  const int64_t HS = d.HS, HSp = d.HSp;
  for (int64_t r = 0; r < n; r++) {
    float* o = dst + r * HSp;
    const float* s = x + (t0 + r) * ld;
    if (r + 4 < n) prefetch_row(s + 4 * ld, HS);
#pragma omp simd
    for (int64_t e = 0; e < HS; e++) o[e] = scale * s[e];
    std::fill(o + HS, o + HSp, 0.f);
  }
  std::fill(dst + n * HSp, dst + rows * HSp, 0.f);
}
// The transpose: dst (HSp, Bc), dst[e][r] = x[t0 + r][e], zero-padded; read row by row, written column by column
// (the Bc x HSp tile is 8-16 KB: the scattered writes stay in L1).
inline void pack_cols(const float* x, int64_t ld, int64_t t0, int64_t n, const Dims& d, float* dst) {
  const int64_t HS = d.HS, HSp = d.HSp;
  for (int64_t r = 0; r < n; r++) {
    const float* s = x + (t0 + r) * ld;
    if (r + 4 < n) prefetch_row(s + 4 * ld, HS);
    for (int64_t e = 0; e < HS; e++) dst[e * kKeyBlock + r] = s[e];
  }
  for (int64_t e = 0; e < HSp; e++) std::fill(dst + e * kKeyBlock + (e < HS ? n : 0), dst + (e + 1) * kKeyBlock, 0.f);
}

// ---- float32 ----------------------------------------------------------------------------------------------------
struct F32Forward {
  static constexpr bool kShortExp = false;  // the softmax's exponentials: exp_fast
  static constexpr bool kWordsP = false;    // P stays float32 (the exponentials' pass writes it; add_pv reads it)
  static int64_t floats(const Dims& d) { return 2 * d.Tk * d.HSp + d.Br * d.HSp; }
  const Dims& d;
  float* Kt;  // (Tk / Bc) blocks of (HSp, Bc): K^T block by block
  float* Vp;  // (Tk, HSp)
  float* Qb;  // (Br, HSp): c Q of one query block
  F32Forward(const Dims& dims, float* ws) : d(dims), Kt(ws), Vp(Kt + d.Tk * d.HSp), Qb(Vp + d.Tk * d.HSp) {}
  void head(const float* K, const float* V, int64_t ld) {
    for (int64_t s0 = 0; s0 < d.T; s0 += kKeyBlock) {
      pack_cols(K, ld, s0, std::min(kKeyBlock, d.T - s0), d, Kt + s0 * d.HSp);
      pack_rows(V, ld, s0, std::min(kKeyBlock, d.T - s0), kKeyBlock, d, 1.f, Vp + s0 * d.HSp);
    }
  }
  void query(const float* Q, int64_t ld, int64_t t0, int64_t rows, float c) { pack_rows(Q, ld, t0, rows, d.Br, d, c, Qb); }
  // S (rows, nv) = Q'_i K_j^T for the keys s0 .. s0 + nv (nv whole vectors)
  void scores(int64_t rows, int64_t nv, int64_t s0, float* S) const {
    micro::gemm<false>(rows, nv, d.HSp, Qb, d.HSp, 1, Kt + s0 * d.HSp, kKeyBlock, S, kKeyBlock);
  }
  // O (rows, HSp) += P (rows, nb) V_j, P with row stride Bc
  void add_pv(int64_t rows, int64_t nb, int64_t s0, const float* P, float* O) const {
    micro::gemm<true>(rows, d.HSp, nb, P, kKeyBlock, 1, Vp + s0 * d.HSp, d.HSp, O, d.HSp);
  }
};

struct F32Backward {
  static constexpr bool kShortExp = false;
  static constexpr bool kKeysInColumns = false;  // dK_j, dV_j (Bc, HSp): a key per row
  static int64_t floats(const Dims& d) { return 2 * d.Tq * d.HSp + 3 * kKeyBlock * d.HSp; }
  const Dims& d;
  float* Qs;   // (Tq, HSp) c Q
  float* dOs;  // (Tq, HSp)
  float* Kb;   // (Bc, HSp)
  float* Ktb;  // (HSp, Bc)
  float* Vtb;  // (HSp, Bc)
  F32Backward(const Dims& dims, float* ws)
      : d(dims), Qs(ws), dOs(Qs + d.Tq * d.HSp), Kb(dOs + d.Tq * d.HSp), Ktb(Kb + kKeyBlock * d.HSp),
        Vtb(Ktb + kKeyBlock * d.HSp) {}
  // c Q (rows ld apart) and dO (rows ldg apart) of the whole head
  void head(const float* Q, int64_t ld, const float* G, int64_t ldg, float c) {
    pack_rows(Q, ld, 0, d.T, d.Tq, d, c, Qs);
    pack_rows(G, ldg, 0, d.T, d.Tq, d, 1.f, dOs);
  }
  void keys(const float* K, const float* V, int64_t ld, int64_t s0, int64_t ns) {
    pack_rows(K, ld, s0, ns, kKeyBlock, d, 1.f, Kb);
    pack_cols(K, ld, s0, ns, d, Ktb);
    pack_cols(V, ld, s0, ns, d, Vtb);
  }
  void scores(int64_t t0, int64_t rows, int64_t nv, float* S) const {  // S = Q'_i K_j^T
    micro::gemm<false>(rows, nv, d.HSp, Qs + t0 * d.HSp, d.HSp, 1, Ktb, kKeyBlock, S, kKeyBlock);
  }
  void add_dv(int64_t t0, int64_t rows, int64_t nb, const float* Pd, float* dV) const {  // dV_j += Pd^T dO_i
    micro::gemm<true>(nb, d.HSp, rows, Pd, 1, kKeyBlock, dOs + t0 * d.HSp, d.HSp, dV, d.HSp);
  }
  void dpd(int64_t t0, int64_t rows, int64_t nv, float* X) const {  // X = dPd = dO_i V_j^T
    micro::gemm<false>(rows, nv, d.HSp, dOs + t0 * d.HSp, d.HSp, 1, Vtb, kKeyBlock, X, kKeyBlock);
  }
  // dQ_i (rows, HSp) += dS K_j (times c later), dK_j += dS^T Q'_i
  void add_dq_dk(int64_t t0, int64_t rows, int64_t nb, const float* dS, float* dQ, float* dK) const {
    micro::gemm<true>(rows, d.HSp, nb, dS, kKeyBlock, 1, Kb, d.HSp, dQ, d.HSp);
    micro::gemm<true>(nb, d.HSp, rows, dS, 1, kKeyBlock, Qs + t0 * d.HSp, d.HSp, dK, d.HSp);
  }
};

// ---- bfloat16 (pair words as tensor/bf16_tiles.h; one uint32 word takes the room of one float) -------------------
// The tiles' rounding by VCVTNE2PS2BF16 (below) or by bf16t's packings: flash_attention_hardware_rounding's setting.
bool hardware_rounding();
#if defined(__AVX512BF16__)
// The backward's tiles Pd and dS as pair words by VCVTNE2PS2BF16: one instruction rounds 32 floats to nearest even, as
// float_to_bf16 does, where bf16t's packings take about 14 integer operations (they run on CPUs and builds without the
// instruction, and keep a denormal as a denormal word; the instruction makes it 0, and VDPBF16PS reads a denormal
// word as 0, so the products are the same). These tiles are in L1 and were 4-5% of the bf16 Transformer step's samples
// with the integer rounding. x is a (rows, Bc) tile whose rows are 0 from the block's keys up to nv (a multiple of 16);
// rows past `rows` read as 0.
namespace ne {
// word j of the pair-row p: [x(2p, j) | x(2p + 1, j)]: the two rows' bf16 values interleaved (VPERMW)
inline __m512i interleave(__m512 lo, __m512 hi) {
  alignas(64) static const uint16_t kIdx[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  return _mm512_permutexvar_epi16(_mm512_load_si512((const void*)kIdx), (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
}
// across (rp, ldc): word (p, j) = [x(2p, j) | x(2p + 1, j)], j < nv; and where in_rows is given, in_rows (rows, Bc / 2):
// word (r, p) = [x(r, 2p) | x(r, 2p + 1)], p < nv / 2 (rounded up to 16 words), from the same read
inline void across_rows(const float* x, int64_t rows, int64_t nv, uint32_t* across, int64_t ldc, uint32_t* in_rows = nullptr) {
  const __m512 z = _mm512_setzero_ps();
  for (int64_t r = 0; r < rows; r += 2) {
    const bool two = r + 1 < rows;
    const float *lo = x + r * kKeyBlock, *hi = lo + kKeyBlock;
    uint32_t* o = across + r / 2 * ldc;
    for (int64_t j = 0; j < nv; j += 32) {
      const bool second = j + 16 < nv;
      const __m512 a0 = _mm512_loadu_ps(lo + j), a1 = second ? _mm512_loadu_ps(lo + j + 16) : z;
      const __m512 b0 = two ? _mm512_loadu_ps(hi + j) : z, b1 = two && second ? _mm512_loadu_ps(hi + j + 16) : z;
      if (in_rows) {
        uint32_t* w = in_rows + r * (kKeyBlock / 2) + j / 2;  // row r's words, then row r + 1's
        _mm512_storeu_si512((void*)w, (__m512i)_mm512_cvtne2ps_pbh(a1, a0));
        if (two) _mm512_storeu_si512((void*)(w + kKeyBlock / 2), (__m512i)_mm512_cvtne2ps_pbh(b1, b0));
      }
      _mm512_storeu_si512((void*)(o + j), interleave(a0, b0));
      if (second) _mm512_storeu_si512((void*)(o + j + 16), interleave(a1, b1));
    }
  }
}
}  // namespace ne
#endif

// A product's column count goes up to whole 16-float vectors (nv is whole micro-kernel vectors: 8 floats in an AVX2
// build); the extra columns exist in the Bc-wide tiles and are never read.
struct Bf16Forward {
  static constexpr bool kShortExp = true;  // P is rounded to bf16: nn/fused/softmax_exp.h's exponential
#if defined(__AVX512BF16__)
  static constexpr bool kWordsP = true;  // where `words`, the exponentials' pass writes P's pair words (p_words)
#else
  static constexpr bool kWordsP = false;  // add_pv packs the float32 P the exponentials' pass wrote
#endif
  const bool words;  // kWordsP and hardware_rounding(): add_pv finds P's words written
  static int64_t floats(const Dims& d) { return d.Tk * d.HSp + d.Br * d.HSp / 2 + d.Br * kKeyBlock / 2; }
  const Dims& d;
  const int64_t hp;  // HSp / 2: pair words along a head
  uint32_t* Kt;      // (Tk / Bc) blocks of (hp, Bc): K^T, pairs along the head
  uint32_t* Vp;      // (Tk / Bc) blocks of (Bc / 2, HSp): V, pairs of keys
  uint32_t* Qb;      // (Br, hp): Q'_i, pairs along the head
  uint32_t* Pb;      // (Br, Bc / 2): P, pairs of keys
  Bf16Forward(const Dims& dims, float* ws)
      : words(kWordsP && hardware_rounding()), d(dims), hp(d.HSp / 2), Kt((uint32_t*)ws), Vp(Kt + d.Tk * hp), Qb(Vp + d.Tk * hp),
        Pb(Qb + d.Br * hp) {}
  void head(const float* K, const float* V, int64_t ld) {
    for (int64_t s0 = 0; s0 < d.T; s0 += kKeyBlock) {
      const int64_t n = std::min(kKeyBlock, d.T - s0);
      bf16t::pairs_transposed(K + s0 * ld, ld, n, d.HS, Kt + s0 * hp, kKeyBlock, kKeyBlock, hp);
      bf16t::pairs_across_rows(V + s0 * ld, ld, n, d.HS, 1.f, Vp + s0 * hp, d.HSp, d.HSp, kKeyBlock / 2);
    }
  }
  void query(const float* Q, int64_t ld, int64_t t0, int64_t rows, float c) {
    bf16t::pairs_in_rows(Q + t0 * ld, ld, rows, d.HS, c, Qb, hp, hp, rows);
  }
  void scores(int64_t rows, int64_t nv, int64_t s0, float* S) const {
    bf16t::tile_gemm(false, rows, round_up(nv, 16), hp, Qb, hp, 1, Kt + s0 * hp, kKeyBlock, S, kKeyBlock);
  }
  uint32_t* p_words(int64_t r) const { return Pb + r * (kKeyBlock / 2); }  // row r of P's words (kWordsP)
  void add_pv(int64_t rows, int64_t nb, int64_t s0, const float* P, float* O) const {
    const int64_t kp = (nb + 1) / 2;
    if (!words) bf16t::pairs_in_rows(P, kKeyBlock, rows, nb, 1.f, Pb, kKeyBlock / 2, kp, rows);
    bf16t::tile_gemm(true, rows, d.HSp, kp, Pb, kKeyBlock / 2, 1, Vp + s0 * hp, d.HSp, O, d.HSp);
  }
};

// dK_j and dV_j are computed transposed here, (HSp, Bc) with a key per column (kKeysInColumns): dV_j^T += dO_i^T Pd and
// dK_j^T += Q'_i^T dS, whose A operands (dO^T, Q'^T: the head's dims as rows, pairs of query rows along them) are
// packed once per (b, h), where A = Pd^T or dS^T was turned over in registers on every tile (amx::panel's gather).
// Each element is the same sum of the same pair products in the same order, so the bits are those of the untransposed
// form. On the Intel VM with AMX a (128 x 32, 32 pairs) product with A transposed took 2500-2700 TSC cycles a call,
// the (32 x 128) one with A in rows ~1700.
struct Bf16Backward {
  static constexpr bool kShortExp = true;
  static constexpr bool kKeysInColumns = true;
  static int64_t floats(const Dims& d) { return 5 * d.Tq * d.HSp / 2 + 3 * kKeyBlock * d.HSp / 2 + 3 * d.Br * kKeyBlock / 2; }
  const Dims& d;
  const int64_t hp, tp;    // HSp / 2; Tq / 2 (pairs of query rows)
  uint32_t *Qr, *Qt;       // Q': (Tq, hp) pairs along the head (for S); Q'^T (HSp, tp), pairs of query rows (for dK^T)
  uint32_t *Gr, *Gt;       // dO: the same two layouts (for dPd; for dV^T)
  uint32_t* rows2;         // (tp, HSp): pairs of query rows before they are turned over into Qt or Gt
  uint32_t *Kt, *Vt, *Kc;  // K_j^T and V_j^T (hp, Bc), pairs along the head; K_j (Bc / 2, HSp), pairs of keys
  uint32_t *Pc, *Xr, *Xc;  // Pd (Br / 2, Bc) pairs of rows; dS (Br, Bc / 2) pairs of keys and (Br / 2, Bc) of rows
  const bool hw = hardware_rounding();  // Pd and dS by ne:: (where the build has AVX512_BF16), else bf16t's packings
  Bf16Backward(const Dims& dims, float* ws) : d(dims), hp(d.HSp / 2), tp(d.Tq / 2) {
    const int64_t head = d.Tq * hp, block = kKeyBlock * hp, tile = d.Br * kKeyBlock / 2;
    Qr = (uint32_t*)ws, Qt = Qr + head, Gr = Qt + head, Gt = Gr + head, rows2 = Gt + head;
    Kt = rows2 + head, Vt = Kt + block, Kc = Vt + block;
    Pc = Kc + block, Xr = Pc + tile, Xc = Xr + tile;
  }
  // x^T's words (HSp, tp) from x's pairs of rows: word (e, p) = [x(2p, e) | x(2p + 1, e)]
  void pairs_of_rows_transposed(const float* x, int64_t ld, float scale, uint32_t* dst) {
    bf16t::pairs_across_rows(x, ld, d.T, d.HS, scale, rows2, d.HSp, d.HSp, tp);
    for (int64_t p = 0; p < tp; p++)
      for (int64_t e = 0; e < d.HSp; e++) dst[e * tp + p] = rows2[p * d.HSp + e];
  }
  void head(const float* Q, int64_t ld, const float* G, int64_t ldg, float c) {
    bf16t::pairs_in_rows(Q, ld, d.T, d.HS, c, Qr, hp, hp, d.Tq);
    pairs_of_rows_transposed(Q, ld, c, Qt);
    bf16t::pairs_in_rows(G, ldg, d.T, d.HS, 1.f, Gr, hp, hp, d.Tq);
    pairs_of_rows_transposed(G, ldg, 1.f, Gt);
  }
  void keys(const float* K, const float* V, int64_t ld, int64_t s0, int64_t ns) {
    bf16t::pairs_transposed(K + s0 * ld, ld, ns, d.HS, Kt, kKeyBlock, kKeyBlock, hp);
    bf16t::pairs_transposed(V + s0 * ld, ld, ns, d.HS, Vt, kKeyBlock, kKeyBlock, hp);
    bf16t::pairs_across_rows(K + s0 * ld, ld, ns, d.HS, 1.f, Kc, d.HSp, d.HSp, kKeyBlock / 2);
  }
  void scores(int64_t t0, int64_t rows, int64_t nv, float* S) const {
    bf16t::tile_gemm(false, rows, round_up(nv, 16), hp, Qr + t0 * hp, hp, 1, Kt, kKeyBlock, S, kKeyBlock);
  }
  void add_dv(int64_t t0, int64_t rows, int64_t nb, const float* Pd, float* dVt) {  // dV^T (HSp, Bc) += dO_i^T Pd
    const int64_t rp = (rows + 1) / 2, nv = round_up(nb, 16);  // B = Pd: pairs of query rows, zero past the keys
#if defined(__AVX512BF16__)
    if (hw) ne::across_rows(Pd, rows, nv, Pc, kKeyBlock);
    else
#endif
      bf16t::pairs_across_rows(Pd, kKeyBlock, rows, nb, 1.f, Pc, kKeyBlock, nv, rp);
    bf16t::tile_gemm(true, d.HSp, nv, rp, Gt + t0 / 2, tp, 1, Pc, kKeyBlock, dVt, kKeyBlock);
  }
  void dpd(int64_t t0, int64_t rows, int64_t nv, float* X) const {
    bf16t::tile_gemm(false, rows, round_up(nv, 16), hp, Gr + t0 * hp, hp, 1, Vt, kKeyBlock, X, kKeyBlock);
  }
  // dQ_i (rows, HSp) += dS K_j (times c later), dK_j^T (HSp, Bc) += Q'_i^T dS
  void add_dq_dk(int64_t t0, int64_t rows, int64_t nb, const float* dS, float* dQ, float* dKt) {
    const int64_t kp = (nb + 1) / 2, rp = (rows + 1) / 2, nv = round_up(nb, 16);  // dS in both layouts from one read
#if defined(__AVX512BF16__)
    if (hw) ne::across_rows(dS, rows, nv, Xc, kKeyBlock, Xr);
    else
#endif
      bf16t::pairs_in_and_across_rows(dS, kKeyBlock, rows, nb, Xr, kKeyBlock / 2, kp, Xc, kKeyBlock, nv, rp);
    bf16t::tile_gemm(true, rows, d.HSp, kp, Xr, kKeyBlock / 2, 1, Kc, d.HSp, dQ, d.HSp);
    bf16t::tile_gemm(true, d.HSp, nv, rp, Qt + t0 / 2, tp, 1, Xc, kKeyBlock, dKt, kKeyBlock);
  }
};

}  // namespace dl::nn::flash
