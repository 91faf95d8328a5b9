// cuda/ops/attention.cuh - self-attention on the packed projection qkv, on the device, without any T x T matrix: the
// online softmax of FlashAttention (Dao et al. 2022) computed row by row, as Thrust algorithms over functors that run on
// the GPU and, with thrust::cpp::par, on the host twin (so CI checks them against the CPU's flash_attention).
//
// Shape letters: B batch, T time, C channels, NH heads, HS = C / NH; c = 1/sqrt(HS); row i = (b NH + h) T + t.
// The map is nn/fused/flash_attention.h's, element for element:
//   scores   S_ts = c q_t . k_s, or -1e9 at a padding key (key_mask 0: the composed path's fill); row t sees the keys
//            lo_t <= s < hi_t: hi_t = n_t = T, t + 1 (causal) or max(prefix_b, t + 1) (prefix-LM), lo_t = 0; with a
//            window w > 0 (the band |t - s| <= w) lo_t = max(0, t - w) and hi_t = min(n_t, t + w + 1)
//   forward  over the keys in tiles of kAttnTile: m' = max(m, max S), a = e^(m - m'), l = a l + sum e^(S - m'),
//            o = a o + sum e^(S - m') M_ts v_s;  out_t = o / l,  L_t = m + log l
//            M_ts = r keep(i, s) (0 or r) with the counter hash of tensor/counter_hash.h, or 1 without dropout
//   backward with P_ts = e^(S_ts - L_t) recomputed and D_t = dO_t . out_t:
//            dS_ts = P_ts (M_ts dO_t . v_s - D_t) (0 at padding keys: their score is a constant); a row whose
//            keys are all padding has P_ts = 1 / (hi_t - lo_t) (as the CPU: -1e9 + log n rounds to -1e9 in float32)
//            dq_t = c sum_s dS_ts k_s                one thread per query row
//            dk_s = sum_t dS_ts (c q_t),  dv_s = sum_t P_ts M_ts dO_t      one thread per key (b, h, s)
// Each thread sums its terms in key (or query) order, so the result does not depend on the launch, and nothing is
// atomic. Memory: out, L (B NH T floats) and D; the scores exist one tile at a time in each thread's registers.
// Head sizes 16, 32 and 64 are compiled as constants (the functors' HSC; attention_rows() picks one, 0 = any size): the
// loops over a head then unroll and a thread's q, o and gradient rows can live in registers instead of local memory,
// which an array indexed by a loop bound only known at run time cannot (the first GPU run, 2026-12-05, ran them so);
// at those sizes the rows are also read four floats per load instruction (dot_row below), where the plain loops issued
// one load per multiply-add (PTX for sm_90: the dq kernel at head size 32 has 172 loads for 396 FMAs, before 524).
// What it is not: a tensor-core kernel (fp32 FMA, each thread reads its keys from L2; the K/V tiles are not staged in
// shared memory: cuda/ops/attention_tc.cuh does that, and picks between the two), cross-attention, an additive bias,
// returned weights; head size at most kAttnMaxHead.
#pragma once
#include "cuda/ops/common.cuh"
#include "tensor/backend.h"

namespace dl::ops {

constexpr int64_t kAttnMaxHead = 128;  // the per-thread q, o and gradient rows are arrays of this many floats
constexpr int64_t kAttnTile = 32;      // keys per step of the online softmax (one rescale per tile)
constexpr float kAttnPadScore = -1e9f;

// `#pragma unroll` for nvcc's device pass only (other compilers warn about a pragma they do not know).
#if defined(__CUDA_ARCH__)
#define DL_UNROLL _Pragma("unroll")
#else
#define DL_UNROLL
#endif

// Reading a head row from memory. Where HSC > 0 (16, 32 or 64: multiples of 4) attention() has checked that every row
// of qkv and dout starts on a 16-byte boundary, and the device reads four floats per load instruction (float4, through
// the read-only cache). Most of these rows are read by a whole warp at once - the keys and values in the forward and in
// dq, the queries and output gradients in dk/dv - so each load is one broadcast, and with one float per load the load
// units (a quarter of the FMA rate on an H100 SM) set the pace: one load per multiply-add. The host twin reads the same
// floats one by one, in the same order, and checks the boundary a float4 load needs (a misaligned row faults on the
// device; on the twin it throws). Sums keep the element order of the plain loop, so the results do not change.
[[noreturn]] inline void misaligned_head_row(const float* p) {
  fail("attention (cuda): a head row at " + std::to_string(reinterpret_cast<uintptr_t>(p)) +
       " is not on a 16-byte boundary (the float4 path needs one; attention() should have taken the plain one)");
}

DL_HD inline void load4(const float* p, float f[4]) {
#if defined(__CUDA_ARCH__)
  const float4 x = __ldg(reinterpret_cast<const float4*>(p));
  f[0] = x.x, f[1] = x.y, f[2] = x.z, f[3] = x.w;
#else
  if (reinterpret_cast<uintptr_t>(p) % 16) misaligned_head_row(p);
  f[0] = p[0], f[1] = p[1], f[2] = p[2], f[3] = p[3];
#endif
}

// a . m over the head: a in registers, m a row in memory (HSC elements, four per load, when HSC > 0; else n, one by one)
template <int HSC> DL_HD inline float dot_row(const float* a, const float* m, int64_t n) {
  float acc = 0;
  if constexpr (HSC > 0) {
    static_assert(HSC % 4 == 0, "the float4 path reads a head four floats at a time");
    DL_UNROLL
    for (int e = 0; e < HSC; e += 4) {
      float f[4];
      load4(m + e, f);
      acc += a[e] * f[0], acc += a[e + 1] * f[1], acc += a[e + 2] * f[2], acc += a[e + 3] * f[3];
    }
  } else {
    for (int64_t e = 0; e < n; e++) acc += a[e] * m[e];
  }
  return acc;
}

// a . b over the head, both rows in memory (four floats of each per load pair where HSC > 0)
template <int HSC> DL_HD inline float dot_rows(const float* a, const float* b, int64_t n) {
  if constexpr (HSC > 0) {
    float acc = 0;
    DL_UNROLL
    for (int e = 0; e < HSC; e += 4) {
      float fa[4], fb[4];
      load4(a + e, fa), load4(b + e, fb);
      acc += fa[0] * fb[0], acc += fa[1] * fb[1], acc += fa[2] * fb[2], acc += fa[3] * fb[3];
    }
    return acc;
  } else {
    return dot_row<0>(a, b, n);
  }
}

// y += w m over the head (y in registers, m a row in memory), or y = w m with add false
template <int HSC> DL_HD inline void axpy_row(float* y, float w, const float* m, int64_t n, bool add = true) {
  if constexpr (HSC > 0) {
    DL_UNROLL
    for (int e = 0; e < HSC; e += 4) {
      float f[4];
      load4(m + e, f);
      DL_UNROLL
      for (int k = 0; k < 4; k++) y[e + k] = add ? y[e + k] + w * f[k] : w * f[k];
    }
  } else {
    for (int64_t e = 0; e < n; e++) y[e] = add ? y[e] + w * m[e] : w * m[e];
  }
}

struct AttnProblem {
  const float* qkv;       // (B, T, 3C)
  const float* km;        // (B, T) or null
  const int64_t* prefix;  // (B) or null
  int64_t B, T, C, NH, HS;
  int64_t window;         // 0: none
  const int64_t* next;    // (B, T + 1): the first real key >= s (T if none), or null without a mask
  bool causal, drop;
  uint64_t seed, thr;
  float r, c;
  DL_HD int64_t keys(int64_t b, int64_t t) const {  // n_t: without a window the keys row t of example b sees are s < n_t
    if (prefix) return prefix[b] > t + 1 ? prefix[b] : t + 1;
    return causal ? t + 1 : T;
  }
  DL_HD int64_t lo(int64_t t) const { return window > 0 && t > window ? t - window : 0; }  // the row's keys: [lo, hi)
  DL_HD int64_t hi(int64_t b, int64_t t) const {
    const int64_t n = keys(b, t);
    return window > 0 && t + window + 1 < n ? t + window + 1 : n;
  }
  DL_HD bool no_real_key(int64_t b, int64_t t) const { return next && next[b * (T + 1) + lo(t)] >= hi(b, t); }
  DL_HD const float* q(int64_t b, int64_t h, int64_t t) const { return qkv + (b * T + t) * 3 * C + h * HS; }
  DL_HD bool pad(int64_t b, int64_t s) const { return km && km[b * T + s] == 0.f; }
  DL_HD float keep(uint32_t key, int64_t s) const {  // M_ts for the row whose key is row_key(seed, i)
    return !drop ? 1.f : (uint64_t)row_draw(key, (uint32_t)s) >= thr ? r : 0.f;
  }
};

template <int HSC> struct AttnForwardF {
  AttnProblem p;
  float *out, *L;  // (B, T, C), (B NH T)
  DL_HD void operator()(int64_t i) const {
    const int64_t T = p.T, t = i % T, bh = i / T, h = bh % p.NH, b = bh / p.NH, HS = HSC > 0 ? HSC : p.HS, n = p.hi(b, t);
    const uint32_t key = p.drop ? row_key(p.seed, (uint64_t)i) : 0;
    float q[kAttnMaxHead], o[kAttnMaxHead], S[kAttnTile];
    axpy_row<HSC>(q, p.c, p.q(b, h, t), HS, false);
    DL_UNROLL
    for (int64_t e = 0; e < HS; e++) o[e] = 0.f;
    float m = -INFINITY, l = 0.f;
    for (int64_t s0 = p.lo(t); s0 < n; s0 += kAttnTile) {
      const int64_t nb = n - s0 < kAttnTile ? n - s0 : kAttnTile;
      float mt = m;
      for (int64_t j = 0; j < nb; j++) {
        const int64_t s = s0 + j;
        S[j] = p.pad(b, s) ? kAttnPadScore : dot_row<HSC>(q, p.q(b, h, s) + p.C, HS);
        mt = S[j] > mt ? S[j] : mt;
      }
      const float a = m_exp(m - mt);  // 0 on the first tile (m = -inf)
      l *= a;
      DL_UNROLL
      for (int64_t e = 0; e < HS; e++) o[e] *= a;
      for (int64_t j = 0; j < nb; j++) {
        const float pe = m_exp(S[j] - mt), w = pe * p.keep(key, s0 + j);
        l += pe;
        axpy_row<HSC>(o, w, p.q(b, h, s0 + j) + 2 * p.C, HS);
      }
      m = mt;
    }
    float* y = out + (b * T + t) * p.C + h * HS;
    DL_UNROLL
    for (int64_t e = 0; e < HS; e++) y[e] = o[e] / l;
    L[i] = m + m_log(l);
  }
};

struct AttnDeltaF {  // D_t = dO_t . out_t per row
  AttnProblem p;
  const float *out, *dout;
  float* D;
  DL_HD void operator()(int64_t i) const {
    const int64_t T = p.T, t = i % T, bh = i / T, h = bh % p.NH, b = bh / p.NH, at = (b * T + t) * p.C + h * p.HS;
    D[i] = dot_row<0>(dout + at, out + at, p.HS);
  }
};

template <int HSC> struct AttnGradQF {  // one thread per query row: dq_t = c sum_s dS_ts k_s
  AttnProblem p;
  const float *L, *D, *dout;
  float* dqkv;
  DL_HD void operator()(int64_t i) const {
    const int64_t T = p.T, t = i % T, bh = i / T, h = bh % p.NH, b = bh / p.NH, HS = HSC > 0 ? HSC : p.HS, n = p.hi(b, t);
    const uint32_t key = p.drop ? row_key(p.seed, (uint64_t)i) : 0;
    float q[kAttnMaxHead], dq[kAttnMaxHead];
    axpy_row<HSC>(q, p.c, p.q(b, h, t), HS, false);
    const float* dO = dout + (b * T + t) * p.C + h * HS;
    DL_UNROLL
    for (int64_t e = 0; e < HS; e++) dq[e] = 0.f;
    const float Li = L[i], Di = D[i];
    for (int64_t s = p.lo(t); s < n; s++) {
      if (p.pad(b, s)) continue;  // dS = 0: the fill does not depend on q
      const float *k = p.q(b, h, s) + p.C, *v = k + p.C;
      const float P = m_exp(dot_row<HSC>(q, k, HS) - Li), dS = P * (p.keep(key, s) * dot_rows<HSC>(dO, v, HS) - Di);
      axpy_row<HSC>(dq, dS, k, HS);
    }
    float* g = dqkv + (b * T + t) * 3 * p.C + h * HS;
    DL_UNROLL
    for (int64_t e = 0; e < HS; e++) g[e] = p.c * dq[e];
  }
};

template <int HSC> struct AttnGradKVF {  // one thread per key (b, h, s): dk_s = sum_t dS_ts (c q_t), dv_s = sum_t P_ts M_ts dO_t
  AttnProblem p;
  const float *L, *D, *dout;
  float* dqkv;
  DL_HD void operator()(int64_t j) const {
    const int64_t T = p.T, s = j % T, bh = j / T, h = bh % p.NH, b = bh / p.NH, HS = HSC > 0 ? HSC : p.HS;
    const bool pad = p.pad(b, s);
    const float *k = p.q(b, h, s) + p.C, *v = k + p.C;
    float dk[kAttnMaxHead], dv[kAttnMaxHead], q[kAttnMaxHead];
    DL_UNROLL
    for (int64_t e = 0; e < HS; e++) dk[e] = dv[e] = 0.f;
    // rows before s see it only under a prefix (s < prefix_b) or without a mask; with a window only rows s - w .. s + w
    int64_t t0 = (p.causal || p.prefix) && !(p.prefix && s < p.prefix[b]) ? s : 0, t1 = T;
    if (p.window > 0) t0 = t0 > s - p.window ? t0 : s - p.window, t1 = s + p.window + 1 < T ? s + p.window + 1 : T;
    for (int64_t t = t0; t < t1; t++) {
      const int64_t lo = p.lo(t), hi = p.hi(b, t);
      if (s < lo || s >= hi) continue;
      const int64_t i = bh * T + t;
      axpy_row<HSC>(q, p.c, p.q(b, h, t), HS, false);
      const float* dO = dout + (b * T + t) * p.C + h * HS;
      // a row with no real key has uniform weights over its keys (the fill everywhere; L_t = -1e9 + log n would round)
      const float S = pad ? kAttnPadScore : dot_row<HSC>(q, k, HS);
      const float P = p.no_real_key(b, t) ? 1.f / (float)(hi - lo) : m_exp(S - L[i]);
      const float M = p.drop ? p.keep(row_key(p.seed, (uint64_t)i), s) : 1.f;
      axpy_row<HSC>(dv, P * M, dO, HS);
      if (pad) continue;
      const float dS = P * (M * dot_rows<HSC>(dO, v, HS) - D[i]);
      DL_UNROLL
      for (int64_t e = 0; e < HS; e++) dk[e] += dS * q[e];
    }
    float* g = dqkv + (b * T + s) * 3 * p.C + p.C + h * HS;
    DL_UNROLL
    for (int64_t e = 0; e < HS; e++) g[e] = dk[e], g[p.C + e] = dv[e];
  }
};

// The problem of one call: qkv (B, T, 3C), key_mask (B, T) f32 or undefined, prefix (B) i64 or undefined, as views of
// the platform (checked by the caller).
inline AttnProblem attn_problem(const AttentionArgs& a, const Tensor& qkv, const Tensor& km, const Tensor& prefix) {
  AttnProblem p{};
  p.qkv = dptr<float>(qkv);
  p.km = km.defined() ? dptr<float>(km) : nullptr;
  p.prefix = prefix.defined() ? dptr<int64_t>(prefix) : nullptr;
  p.B = qkv.size(0), p.T = qkv.size(1), p.C = qkv.size(2) / 3, p.NH = a.heads, p.HS = p.C / a.heads;
  p.causal = a.causal, p.drop = a.dropout, p.seed = a.seed, p.thr = a.thr, p.r = a.r, p.window = a.window;
  p.c = (float)(1.0 / sqrt((double)p.HS));
  p.next = nullptr;  // set by attention_backward where there is a mask
  return p;
}

struct AttnNextRealF {  // one thread per example b: next[b][s] = the first real key >= s (T if none), s <= T
  const float* km;
  int64_t T;
  int64_t* next;
  DL_HD void operator()(int64_t b) const {
    int64_t* n = next + b * (T + 1);
    n[T] = T;
    for (int64_t s = T - 1; s >= 0; s--) n[s] = km[b * T + s] != 0.f ? s : n[s + 1];
  }
};

// f.template operator()<HSC>() with the head size as a constant where it is one of the compiled ones and the rows are
// read four floats at a time (`aligned`: every head row of the tensors read starts on a 16-byte boundary, which C % 4 ==
// 0 and a 16-byte aligned base give), else HSC = 0.
template <class F> void with_head_size(int64_t HS, bool aligned, F&& f) {
  switch (aligned ? HS : 0) {
    case 16: f.template operator()<16>(); break;
    case 32: f.template operator()<32>(); break;
    case 64: f.template operator()<64>(); break;
    default: f.template operator()<0>();
  }
}
inline bool aligned16(const float* base, int64_t C) { return reinterpret_cast<uintptr_t>(base) % 16 == 0 && C % 4 == 0; }

// The rows' kernels (one thread per query row, then per key); cuda/ops/attention_tc.cuh's attention() picks them or
// the tensor-core tiles. `aligned`: every head row read is on a 16-byte boundary (aligned16 of qkv, and of dout backward).
template <class Exec> void attention_rows(const Exec& exec, const AttnProblem& p, bool aligned, float* out, float* L) {
  with_head_size(p.HS, aligned, [&]<int HSC>() { for_n(exec, p.B * p.NH * p.T, AttnForwardF<HSC>{p, out, L}); });
}

// What both backward kernels read besides qkv, out, L and dout: D_t = dO_t . out_t per row, and where there is a key
// mask AttnNextRealF's table (B, T + 1) for the rows with no real key (set in p.next). Scratch of the platform.
struct AttnBackwardScratch {
  Tensor D, next;
};
template <class Exec>
AttnBackwardScratch attention_backward_scratch(const Exec& exec, AttnProblem& p, const Tensor& out, const Tensor& dout) {
  AttnBackwardScratch s;
  const int64_t rows = p.B * p.NH * p.T;
  s.D = Tensor::empty({rows}, DType::f32, out.device());
  for_n(exec, rows, AttnDeltaF{p, dptr<float>(out), dptr<float>(dout), dptr<float>(s.D)});
  if (p.km) {
    s.next = Tensor::empty({p.B, p.T + 1}, DType::i64, out.device());
    for_n(exec, p.B, AttnNextRealF{p.km, p.T, dptr<int64_t>(s.next)});
    p.next = dptr<int64_t>(s.next);
  }
  return s;
}

template <class Exec>
void attention_rows_backward(const Exec& exec, const AttnProblem& p, bool aligned, const float* L, const float* D,
                             const float* dout, float* dqkv) {
  const int64_t rows = p.B * p.NH * p.T;
  with_head_size(p.HS, aligned, [&]<int HSC>() {
    for_n(exec, rows, AttnGradQF<HSC>{p, L, D, dout, dqkv});
    for_n(exec, rows, AttnGradKVF<HSC>{p, L, D, dout, dqkv});
  });
}

}  // namespace dl::ops
