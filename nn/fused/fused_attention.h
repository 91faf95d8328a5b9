// nn/fused/fused_attention.h - scaled dot-product attention as ONE primitive with its own forward and backward,
// the fused twin of the composed scaled_dot_product_attention (nn/attention/attention.h). Both agree in
// tests/nn/fused/test_fused_attention.cpp (values and every gradient).
//
// Shape letters: B batch, NH heads, T query time, S key time, HS head size; c = 1/sqrt(HS).
//
// Forward (FlashAttention's online softmax, Milakov & Gimelshein 2018; Dao et al. 2022), per query row t,
// over key blocks of kBlock keys, never storing the T x S matrix:
//   s_j = c q_t . k_j  for allowed j  (key_mask[b, j] != 0, and j <= t + S - T when causal; with prefix lengths P,
//                                      j < P[b] or j <= t + S - T instead: the prefix-LM mask of attention.h)
//   m'  = max(m, max_j s_j);  l = l e^(m - m') + sum_j e^(s_j - m');  acc = acc e^(m - m') + sum_j e^(s_j - m') v_j
//   o_t = acc / l;  saves L_t = m + log l  (the log-sum-exp of the row)
// Backward recomputes each block (p_j = e^(s_j - L_t)); with D_t = dO_t . o_t:
//   in the forward this was o_t = sum_j p_j v_j, so      dv_j += p_j dO_t,   dp_j = dO_t . v_j
//   softmax backward                                     ds_j = p_j (dp_j - D_t)
//   s_j = c q_t . k_j, so                                dq_t += c ds_j k_j,   dk_j += c ds_j q_t
// Work is split over (b, head) pairs with OpenMP, so each thread owns its dk/dv rows (no races) and the
// result does not depend on the thread count. Accumulation is in double.
//
// Deliberate deviation from the composed path: a query row with no allowed key gives o_t = 0 here, while
// the composed path (finite -1e9 fill) averages v over the row. Rows like that only occur for padded queries.
// What it is not: dropout on the weights, an additive bias, or returning the weights (use the composed path).
#pragma once
#include "autograd/ops.h"

namespace dl::nn {

// q (B, NH, T, HS), k, v (B, NH, S, HS), key_mask (B, S) (any dtype, nonzero = real) or undefined.
// prefix (B) i64 with 0 <= prefix[b] <= S, or undefined: the prefix-LM mask (replaces causal).
Var fused_attention(const Var& q, const Var& k, const Var& v, const Tensor& key_mask, bool causal,
                    const Tensor& prefix = Tensor());

}  // namespace dl::nn
