// cuda/ops/attention_tc.cuh - the attention primitive on tensor cores: the map of cuda/ops/attention.cuh (scores,
// masks, dropout, online softmax; the same L and the same gradients) with the products done by warps on 16 x 16 tiles
// in 3xTF32 (cuda/ops/tf32x3.cuh: float32 accuracy), and attention() / attention_backward(), which pick these tiles or
// the rows' kernels.
//
// One warp a tile of 16 (cuda/ops/warps.cuh), its tiles in its own shared memory (rows of HS + 4 floats: a row starts
// 4 banks after the one above):
//   forward   warp = 16 query rows t0..t0+15 of one (b, h). Q (scaled by c) stays in registers as TF32 pairs; for each
//             tile of 16 keys in the rows' union [lo(t0), hi(t_last)): K, V staged (zeros past the end),
//             S = Q K^T (tensor cores), then each lane half a row: the row's own key range and mask (-1e9 at padding keys,
//             outside the range no term), m' = max(m, max S), a = e^(m - m'), l = a l + sum e^(S - m'), P = e^(S - m') M;
//             X = P V (tensor cores), O = a O + X (lanes). out = O / l, L = m + log l.
//   dq        warp = 16 query rows: for each key tile S = Q K^T and dP = dO V^T (tensor cores), a lane per half row:
//             dS = P (M dP - D) with P = e^(S - L) (0 at padding keys and outside the range), dq += dS K (tensor
//             cores, the sum stays in the accumulator); dq = c dq.
//   dk, dv    warp = 16 keys s0..s0+15: for each tile of the query rows that can see them ([t0(s0), t1(s_last)), as the
//             rows' kernel bounds them), S and dP as above, a lane per half row: W = P M, dS (P = 1 / (hi - lo) on a row with
//             no real key); dv += W^T dO, dk += dS^T (c Q) (tensor cores, the transposes read from the tiles as stored).
// A tile's exponentials are the rows' kernel's, but its sums run in another order and its products are 3xTF32: the
// results agree with the CPU's to float32 tolerance, not to the bit (the twin checks, tests/cuda_logic).
// Taken for head sizes 16, 32 and 64 with every head row on a 16-byte boundary; DL_ATTENTION_TC=0 takes the rows'
// kernels instead (to compare them on a GPU). What it is not: FlashAttention-2 (no K/V tile shared between warps, no
// pipelining, the softmax in scalar code): the products, the bulk of the work, are on tensor cores; the rest is not.
#pragma once
#include <cstdlib>
#include <cstring>

#include "cuda/ops/attention.cuh"
#include "cuda/ops/tf32x3.cuh"
#include "cuda/ops/warps.cuh"

namespace dl::ops {

// One warp's shared memory, in floats; every tile's base on a 32-byte boundary (what a tensor-core load needs).
template <int HS> struct TcTiles {
  static constexpr int ld = HS + 4, lds = 16 + 4;  // row strides: head tiles (16 x HS), score tiles (16 x 16)
  static constexpr int head = 16 * ld, score = 16 * lds;
  static constexpr int q = 0, k = q + head, v = k + head, o = v + head, x = o + head, s = x + head, s2 = s + score,
                       rows = s2 + score, total = rows + 3 * 16 + 2 * 32;
  static_assert(HS % 16 == 0 && head % 8 == 0 && score % 8 == 0, "tiles on 32-byte boundaries");
};

// Four floats of a warp's tiles (shared memory, 16-byte aligned: a tile's base and its rows are) in one access on the
// device; the twin checks the alignment such an access needs.
DL_HD inline void get4(const float* p, float f[4]) {
#if defined(__CUDA_ARCH__)
  const float4 x = *reinterpret_cast<const float4*>(p);
  f[0] = x.x, f[1] = x.y, f[2] = x.z, f[3] = x.w;
#else
  if (reinterpret_cast<uintptr_t>(p) % 16) misaligned_head_row(p);
  f[0] = p[0], f[1] = p[1], f[2] = p[2], f[3] = p[3];
#endif
}
DL_HD inline void put4(float* p, const float f[4]) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<float4*>(p) = make_float4(f[0], f[1], f[2], f[3]);
#else
  if (reinterpret_cast<uintptr_t>(p) % 16) misaligned_head_row(p);
  p[0] = f[0], p[1] = f[1], p[2] = f[2], p[3] = f[3];
#endif
}

// Rows r < n of a head, row r at src + r * stride (16-byte aligned), times `scale`, into a 16 x HS tile; zeros below.
template <int HS> DL_HD inline void stage(float* tile, const float* src, int64_t stride, int64_t n, float scale, Lanes ln) {
  constexpr int ld = TcTiles<HS>::ld, q4 = HS / 4;
  for (int i = ln.first; i < 16 * q4; i += ln.step) {
    const int r = i / q4, e = (i % q4) * 4;
    float f[4] = {0.f, 0.f, 0.f, 0.f};
    if (r < n) load4(src + r * stride + e, f);
    for (int u = 0; u < 4; u++) f[u] *= scale;
    put4(tile + r * ld + e, f);
  }
}

// Warp w's 16 rows (query rows, or keys) of one (b, h): x0 the first, n of them inside T
struct TcWarp {
  int64_t bh, b, h, x0, n;
  DL_HD TcWarp(const AttnProblem& p, int64_t w) {
    const int64_t nt = (p.T + 15) / 16;
    bh = w / nt, h = bh % p.NH, b = bh / p.NH, x0 = (w % nt) * 16, n = p.T - x0 < 16 ? p.T - x0 : 16;
  }
};

// What both gradient kernels read and write
struct AttnGradArgs {
  AttnProblem p;
  const float *L, *D, *dout;
  float* dqkv;
};

template <int HS> struct AttnForwardTcF {
  AttnProblem p;
  float *out, *L;
  DL_HD void operator()(int64_t w, float* sm, Lanes ln) const {
    using Y = TcTiles<HS>;
    namespace tc = tf32x3;
    const TcWarp wp(p, w);
    const int64_t T = p.T, bh = wp.bh, b = wp.b, h = wp.h, t0 = wp.x0, nq = wp.n;
    float *Q = sm + Y::q, *K = sm + Y::k, *V = sm + Y::v, *O = sm + Y::o, *X = sm + Y::x, *S = sm + Y::s;
    float *m = sm + Y::rows, *l = m + 16, *a = l + 16, *mx = a + 16, *sx = mx + 32;
    stage<HS>(Q, p.q(b, h, t0), 3 * p.C, nq, p.c, ln);
    for (int i = ln.first; i < 16 * Y::ld; i += ln.step) O[i] = 0.f;
    for (int r = ln.first; r < 16; r += ln.step) m[r] = -INFINITY, l[r] = 0.f;
    warp_sync();
    tc::A<tc::Row> qa[HS / 8];
    DL_UNROLL
    for (int kk = 0; kk < HS / 8; kk++) tc::load(qa[kk], Q + kk * 8, Y::ld);
    const int64_t hi = p.hi(b, t0 + nq - 1);
    for (int64_t s0 = p.lo(t0); s0 < hi; s0 += 16) {
      const int64_t nk = hi - s0 < 16 ? hi - s0 : 16;
      stage<HS>(K, p.q(b, h, s0) + p.C, 3 * p.C, nk, 1.f, ln);
      stage<HS>(V, p.q(b, h, s0) + 2 * p.C, 3 * p.C, nk, 1.f, ln);
      warp_sync();
      tc::Acc sc;
      tc::zero(sc);
      DL_UNROLL
      for (int kk = 0; kk < HS / 8; kk++) {
        tc::B<tc::Col> kb;  // K^T: the K tile read column-major
        tc::load(kb, K + kk * 8, Y::ld);
        tc::mma(sc, qa[kk], kb);
      }
      tc::store(S, sc, Y::lds);
      warp_sync();
      // the online softmax: each lane takes half a row (8 keys), its partial max and sum in mx / sx, then one lane a row
      for (int i = ln.first; i < 32; i += ln.step) {
        const int r = i / 2, j0 = (i % 2) * 8;
        float* Sr = S + r * Y::lds;
        const int64_t t = t0 + r, rlo = r < nq ? p.lo(t) : 0, rhi = r < nq ? p.hi(b, t) : 0;  // past the last row: none
        float mt = -INFINITY;
        for (int j = j0; j < j0 + 8; j++) {
          const int64_t s = s0 + j;
          Sr[j] = j >= nk || s < rlo || s >= rhi ? -INFINITY : p.pad(b, s) ? kAttnPadScore : Sr[j];
          mt = Sr[j] > mt ? Sr[j] : mt;
        }
        mx[i] = mt;
      }
      warp_sync();
      for (int i = ln.first; i < 32; i += ln.step) {
        const int r = i / 2, j0 = (i % 2) * 8;
        float* Sr = S + r * Y::lds;
        float mt = m[r] > mx[2 * r] ? m[r] : mx[2 * r];
        mt = mt > mx[2 * r + 1] ? mt : mx[2 * r + 1];
        const uint32_t key = p.drop && r < nq ? row_key(p.seed, (uint64_t)(bh * T + t0 + r)) : 0;
        float sum = 0.f;
        for (int j = j0; j < j0 + 8; j++) {
          const float pe = Sr[j] == -INFINITY ? 0.f : m_exp(Sr[j] - mt);
          sum += pe;
          Sr[j] = pe * p.keep(key, s0 + j);
        }
        sx[i] = sum;
      }
      warp_sync();
      for (int r = ln.first; r < 16; r += ln.step) {
        float mt = m[r] > mx[2 * r] ? m[r] : mx[2 * r];
        mt = mt > mx[2 * r + 1] ? mt : mx[2 * r + 1];
        a[r] = mt == -INFINITY ? 1.f : m_exp(m[r] - mt);  // no key yet (or past the last row): nothing to rescale
        l[r] = l[r] * a[r] + (sx[2 * r] + sx[2 * r + 1]), m[r] = mt;
      }
      warp_sync();
      DL_UNROLL
      for (int n0 = 0; n0 < HS; n0 += 16) {  // X = P V, 16 columns at a time
        tc::Acc xc;
        tc::zero(xc);
        DL_UNROLL
        for (int kk = 0; kk < 16; kk += 8) {
          tc::A<tc::Row> pa;
          tc::B<tc::Row> vb;
          tc::load(pa, S + kk, Y::lds);
          tc::load(vb, V + kk * Y::ld + n0, Y::ld);
          tc::mma(xc, pa, vb);
        }
        tc::store(X + n0, xc, Y::ld);
      }
      warp_sync();
      for (int i = ln.first; i < 16 * HS / 4; i += ln.step) {  // O = a O + X, four floats at a time
        const int r = i / (HS / 4), e = (i % (HS / 4)) * 4;
        float o[4], x[4];
        get4(O + r * Y::ld + e, o), get4(X + r * Y::ld + e, x);
        for (int u = 0; u < 4; u++) o[u] = a[r] * o[u] + x[u];
        put4(O + r * Y::ld + e, o);
      }
      warp_sync();
    }
    for (int i = ln.first; i < 16 * HS; i += ln.step) {
      const int r = i / HS, e = i % HS;
      if (r < nq) out[(b * T + t0 + r) * p.C + h * HS + e] = O[r * Y::ld + e] / l[r];
    }
    for (int r = ln.first; r < 16; r += ln.step)
      if (r < nq) L[bh * T + t0 + r] = m[r] + m_log(l[r]);
  }
};

template <int HS> struct AttnGradQTcF : AttnGradArgs {  // warp = 16 query rows: dq = c sum_s dS_ts k_s
  DL_HD void operator()(int64_t w, float* sm, Lanes ln) const {
    using Y = TcTiles<HS>;
    namespace tc = tf32x3;
    const TcWarp wp(p, w);
    const int64_t T = p.T, bh = wp.bh, b = wp.b, h = wp.h, t0 = wp.x0, nq = wp.n;
    float *Q = sm + Y::q, *K = sm + Y::k, *V = sm + Y::v, *G = sm + Y::x, *S = sm + Y::s, *dP = sm + Y::s2;
    stage<HS>(Q, p.q(b, h, t0), 3 * p.C, nq, p.c, ln);
    stage<HS>(G, dout + (b * T + t0) * p.C + h * HS, p.C, nq, 1.f, ln);
    warp_sync();
    tc::A<tc::Row> qa[HS / 8], ga[HS / 8];
    DL_UNROLL
    for (int kk = 0; kk < HS / 8; kk++) tc::load(qa[kk], Q + kk * 8, Y::ld), tc::load(ga[kk], G + kk * 8, Y::ld);
    tc::Acc dq[HS / 16];
    DL_UNROLL
    for (int n = 0; n < HS / 16; n++) tc::zero(dq[n]);
    const int64_t hi = p.hi(b, t0 + nq - 1);
    for (int64_t s0 = p.lo(t0); s0 < hi; s0 += 16) {
      const int64_t nk = hi - s0 < 16 ? hi - s0 : 16;
      stage<HS>(K, p.q(b, h, s0) + p.C, 3 * p.C, nk, 1.f, ln);
      stage<HS>(V, p.q(b, h, s0) + 2 * p.C, 3 * p.C, nk, 1.f, ln);
      warp_sync();
      tc::Acc sc, pc;
      tc::zero(sc), tc::zero(pc);
      DL_UNROLL
      for (int kk = 0; kk < HS / 8; kk++) {
        tc::B<tc::Col> kb, vb;
        tc::load(kb, K + kk * 8, Y::ld), tc::load(vb, V + kk * 8, Y::ld);
        tc::mma(sc, qa[kk], kb), tc::mma(pc, ga[kk], vb);
      }
      tc::store(S, sc, Y::lds), tc::store(dP, pc, Y::lds);
      warp_sync();
      for (int h2 = ln.first; h2 < 32; h2 += ln.step) {  // dS into S, each lane half a row (8 keys)
        const int r = h2 / 2, j0 = (h2 % 2) * 8;
        float* Sr = S + r * Y::lds;
        const int64_t t = t0 + r, rlo = r < nq ? p.lo(t) : 0, rhi = r < nq ? p.hi(b, t) : 0;
        const int64_t i = bh * T + t;
        const uint32_t key = p.drop && r < nq ? row_key(p.seed, (uint64_t)i) : 0;
        const float Li = r < nq ? L[i] : 0.f, Di = r < nq ? D[i] : 0.f;
        for (int j = j0; j < j0 + 8; j++) {
          const int64_t s = s0 + j;
          const bool in = r < nq && j < nk && s >= rlo && s < rhi && !p.pad(b, s);  // dS = 0 at a padding key
          Sr[j] = in ? m_exp(Sr[j] - Li) * (p.keep(key, s) * dP[r * Y::lds + j] - Di) : 0.f;
        }
      }
      warp_sync();
      DL_UNROLL
      for (int n = 0; n < HS / 16; n++) {
        DL_UNROLL
        for (int kk = 0; kk < 16; kk += 8) {
          tc::A<tc::Row> da;
          tc::B<tc::Row> kb;
          tc::load(da, S + kk, Y::lds), tc::load(kb, K + kk * Y::ld + n * 16, Y::ld);
          tc::mma(dq[n], da, kb);
        }
      }
      warp_sync();  // the next key tile overwrites K, V and S
    }
    DL_UNROLL
    for (int n = 0; n < HS / 16; n++) tc::store(G + n * 16, dq[n], Y::ld);
    warp_sync();
    for (int i = ln.first; i < 16 * HS; i += ln.step) {
      const int r = i / HS, e = i % HS;
      if (r < nq) dqkv[(b * T + t0 + r) * 3 * p.C + h * HS + e] = p.c * G[r * Y::ld + e];
    }
  }
};

template <int HS> struct AttnGradKVTcF : AttnGradArgs {  // warp = 16 keys: dk = sum_t dS_ts (c q_t), dv = sum_t P_ts M_ts dO_t
  DL_HD void operator()(int64_t w, float* sm, Lanes ln) const {
    using Y = TcTiles<HS>;
    namespace tc = tf32x3;
    const TcWarp wp(p, w);
    const int64_t T = p.T, bh = wp.bh, b = wp.b, h = wp.h, s0 = wp.x0, nk = wp.n, sl = s0 + nk - 1;
    float *Q = sm + Y::q, *K = sm + Y::k, *V = sm + Y::v, *G = sm + Y::x, *W = sm + Y::s, *dS = sm + Y::s2;
    stage<HS>(K, p.q(b, h, s0) + p.C, 3 * p.C, nk, 1.f, ln);
    stage<HS>(V, p.q(b, h, s0) + 2 * p.C, 3 * p.C, nk, 1.f, ln);
    tc::Acc dk[HS / 16], dv[HS / 16];
    DL_UNROLL
    for (int n = 0; n < HS / 16; n++) tc::zero(dk[n]), tc::zero(dv[n]);
    // the query rows that can see a key of the tile (the rows' kernel's bounds, at its first and last key)
    int64_t ta = (p.causal || p.prefix) && !(p.prefix && s0 < p.prefix[b]) ? s0 : 0, tb = T;
    if (p.window > 0) ta = ta > s0 - p.window ? ta : s0 - p.window, tb = sl + p.window + 1 < T ? sl + p.window + 1 : T;
    for (int64_t q0 = ta; q0 < tb; q0 += 16) {
      const int64_t nq = tb - q0 < 16 ? tb - q0 : 16;
      stage<HS>(Q, p.q(b, h, q0), 3 * p.C, nq, p.c, ln);
      stage<HS>(G, dout + (b * T + q0) * p.C + h * HS, p.C, nq, 1.f, ln);
      warp_sync();
      tc::Acc sc, pc;
      tc::zero(sc), tc::zero(pc);
      DL_UNROLL
      for (int kk = 0; kk < HS / 8; kk++) {
        tc::A<tc::Row> qa, ga;
        tc::B<tc::Col> kb, vb;
        tc::load(qa, Q + kk * 8, Y::ld), tc::load(ga, G + kk * 8, Y::ld);
        tc::load(kb, K + kk * 8, Y::ld), tc::load(vb, V + kk * 8, Y::ld);
        tc::mma(sc, qa, kb), tc::mma(pc, ga, vb);
      }
      tc::store(W, sc, Y::lds), tc::store(dS, pc, Y::lds);
      warp_sync();
      for (int h2 = ln.first; h2 < 32; h2 += ln.step) {  // W = P M and dS, each lane half a query row (8 keys)
        const int r = h2 / 2, j0 = (h2 % 2) * 8;
        float *Wr = W + r * Y::lds, *dSr = dS + r * Y::lds;
        const int64_t t = q0 + r, rlo = r < nq ? p.lo(t) : 0, rhi = r < nq ? p.hi(b, t) : 0, i = bh * T + t;
        const bool none = r < nq && p.no_real_key(b, t);  // uniform weights over the row's keys
        const uint32_t key = p.drop && r < nq ? row_key(p.seed, (uint64_t)i) : 0;
        const float Li = r < nq ? L[i] : 0.f, Di = r < nq ? D[i] : 0.f;
        for (int j = j0; j < j0 + 8; j++) {
          const int64_t s = s0 + j;
          if (r >= nq || j >= nk || s < rlo || s >= rhi) {
            Wr[j] = dSr[j] = 0.f;
            continue;
          }
          const bool pad = p.pad(b, s);
          const float P = none ? 1.f / (float)(rhi - rlo) : m_exp((pad ? kAttnPadScore : Wr[j]) - Li);
          const float M = p.drop ? p.keep(key, s) : 1.f;
          dSr[j] = pad ? 0.f : P * (M * dSr[j] - Di);
          Wr[j] = P * M;
        }
      }
      warp_sync();
      DL_UNROLL
      for (int n = 0; n < HS / 16; n++) {
        DL_UNROLL
        for (int kk = 0; kk < 16; kk += 8) {  // over the tile's query rows
          tc::A<tc::Col> wa, da;              // W^T and dS^T: the tiles read column-major
          tc::B<tc::Row> gb, qb;
          tc::load(wa, W + kk * Y::lds, Y::lds), tc::load(da, dS + kk * Y::lds, Y::lds);
          tc::load(gb, G + kk * Y::ld + n * 16, Y::ld), tc::load(qb, Q + kk * Y::ld + n * 16, Y::ld);
          tc::mma(dv[n], wa, gb), tc::mma(dk[n], da, qb);
        }
      }
      warp_sync();  // the next query tile overwrites Q, G, W and dS
    }
    DL_UNROLL
    for (int n = 0; n < HS / 16; n++) tc::store(Q + n * 16, dk[n], Y::ld), tc::store(G + n * 16, dv[n], Y::ld);
    warp_sync();
    for (int i = ln.first; i < 16 * HS; i += ln.step) {
      const int r = i / HS, e = i % HS;
      if (r < nk) {
        float* g = dqkv + (b * T + s0 + r) * 3 * p.C + p.C + h * HS + e;
        g[0] = Q[r * Y::ld + e], g[p.C] = G[r * Y::ld + e];
      }
    }
  }
};

// The tiles where they apply: head size 16, 32 or 64 (with_head_size's constants), every row read on a 16-byte
// boundary, and not switched off.
inline bool attention_tiles(int64_t HS, bool aligned) {
  const char* e = std::getenv("DL_ATTENTION_TC");
  return aligned && (HS == 16 || HS == 32 || HS == 64) && !(e && std::strcmp(e, "0") == 0);
}

template <class Exec>
void attention(const Exec& exec, const AttentionArgs& a, const Tensor& qkv, const Tensor& km, const Tensor& prefix,
               const Tensor& out, const Tensor& L) {
  const AttnProblem p = attn_problem(a, qkv, km, prefix);
  float *po = dptr<float>(out), *pl = dptr<float>(L);
  const bool aligned = aligned16(p.qkv, p.C);
  if (!attention_tiles(p.HS, aligned)) return attention_rows(exec, p, aligned, po, pl);
  with_head_size(p.HS, true, [&]<int HS>() {
    if constexpr (HS > 0) for_warps(exec, p.B * p.NH * ((p.T + 15) / 16), TcTiles<HS>::total, AttnForwardTcF<HS>{p, po, pl});
  });
}

template <class Exec>
void attention_backward(const Exec& exec, const AttentionArgs& a, const Tensor& qkv, const Tensor& km, const Tensor& prefix,
                        const Tensor& out, const Tensor& L, const Tensor& dout, const Tensor& dqkv) {
  AttnProblem p = attn_problem(a, qkv, km, prefix);
  const AttnBackwardScratch s = attention_backward_scratch(exec, p, out, dout);
  const float *pl = dptr<float>(L), *pD = dptr<float>(s.D), *pg = dptr<float>(dout);
  float* pd = dptr<float>(dqkv);
  const bool aligned = aligned16(p.qkv, p.C) && aligned16(pg, p.C);
  if (!attention_tiles(p.HS, aligned)) return attention_rows_backward(exec, p, aligned, pl, pD, pg, pd);
  with_head_size(p.HS, true, [&]<int HS>() {
    if constexpr (HS > 0) {
      const int64_t warps = p.B * p.NH * ((p.T + 15) / 16);
      const AttnGradArgs g{p, pl, pD, pg, pd};
      for_warps(exec, warps, TcTiles<HS>::total, AttnGradQTcF<HS>{g});
      for_warps(exec, warps, TcTiles<HS>::total, AttnGradKVTcF<HS>{g});
    }
  });
}

}  // namespace dl::ops
