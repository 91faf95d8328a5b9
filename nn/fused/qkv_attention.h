// nn/fused/qkv_attention.h - multi-head self-attention with dropout on the weights, as ONE primitive that works on
// the packed projection qkv = x [Wq; Wk; Wv]^T + b and runs on sgemm. The training-speed twin of
//   merge_heads(scaled_dot_product_attention(split_heads(q), split_heads(k), split_heads(v), {causal, dropout}))
// (nn/attention/attention.h); tests/nn/fused/test_qkv_attention.cpp checks that the two agree, values and gradients,
// with and without dropout (the composed path is given this primitive's mask).
//
// Shape letters: B batch, T time, C channels, NH heads, HS = C / NH; c = 1/sqrt(HS); r = 1/(1 - p).
// qkv (B, T, 3C) holds [q | k | v], head h owning channels h HS .. (h+1) HS - 1 of each (split_heads' order).
//
// Per (b, h), with Q, K, V the (T, HS) slices read in place (leading dimension 3C, no split/merge copies):
//   S = c Q K^T                         (T, T)   one sgemm
//   S_ts = -1e9 where key s is padding (key_mask[b, s] = 0), as the composed path's masked_fill
//   P = softmax_rows(S) (causal: s > t masked);  L_t = log-sum-exp of row t (saved, T floats)
//   Pd = P * M,  M = r keep(b, h, t, s) (0 or r)  keep: a counter-based hash of (seed, b, h, t, s) >= p 2^32
//   O = Pd V                            (T, HS)  one sgemm, written into out (B, T, C) at head h's columns
// Backward recomputes S and P from Q, K and L (nothing T x T is kept between forward and backward):
//   in the forward this was O = Pd V, so    dV = Pd^T dO,   dPd = dO V^T
//   Pd = P * M, so                          dP = dPd * M
//   softmax backward                        dS = P * (dP - D),  D_t = sum_s P_ts dP_ts = dO_t . O_t
//                                           (dS = 0 at padding keys: the fill does not depend on S)
//   S = c Q K^T, so                         dQ = c dS K,   dK = c dS^T Q
// Work is split over the B * NH pairs with OpenMP (each thread owns its pair's rows of dqkv: no races, and the
// result does not depend on the thread count); sgemm runs single-threaded inside, so the two thread pools never
// run at once. Scratch per thread: two T x T float matrices (at T = 512 they stay in L2). Causal: the products
// run on row blocks of 64 and skip the all-zero upper triangle beyond each block (about half the work).
// Under Precision::bf16, where the CPU computes in bf16 (tensor/bf16.h), the five products run on tensor/bf16_gemm.h
// instead of sgemm: the operands the blocked attention rounds (Q' = c Q, K, V, dO, Pd, dS) are rounded to bf16 and
// summed in float32; softmax, L, D, masks and dropout stay float32 (tests/nn/fused/test_qkv_attention_bf16.cpp).
// What it is not: cross-attention, an additive bias, or returned weights (use nn/attention/attention.h).
#pragma once
#include "autograd/ops.h"

namespace dl::nn {

// qkv (B, T, 3C) -> (B, T, C). Dropout p on the weights when training (mask drawn from g: one u64 per call).
// key_mask (B, T), 1 = real position, 0 = padding (no query attends to it), or undefined.
// prefix (B) i64 with 0 <= prefix[b] <= T, or undefined: the prefix-LM mask of attention.h (replaces causal): row t
// sees keys s < max(prefix[b], t + 1). The products then run on the full T x T (no triangle skipped).
Var qkv_attention(const Var& qkv, int64_t heads, bool causal, double p, bool training, Generator& g,
                  const Tensor& key_mask = Tensor(), const Tensor& prefix = Tensor());

// The argument checks both packed-projection primitives (this one and flash_attention) make, naming `op`:
// qkv (B, T, 3C) f32 on the CPU (or any device when any_device) with C divisible by heads, dropout p in [0, 1].
void check_packed_qkv(const char* op, const Var& qkv, int64_t heads, double p, bool any_device = false);
// The mask the primitive uses for a call whose seed is `seed`: (B, NH, T, T) holding 0 or 1/(1-p). For tests.
Tensor qkv_attention_mask(uint64_t seed, int64_t B, int64_t NH, int64_t T, double p);
// The seed the next call to qkv_attention with generator g will use (a copy of g advanced once). For tests.
uint64_t qkv_attention_next_seed(const Generator& g);

}  // namespace dl::nn
