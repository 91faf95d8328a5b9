// nn/fused/flash_attention.h - blocked self-attention with the online softmax (FlashAttention, Dao et al. 2022,
// arXiv 2205.14135; FlashAttention-2's loop order, Dao 2023, arXiv 2307.08691) in float32 on the CPU: the long-sequence
// twin of the packed primitive (nn/fused/qkv_attention.h). It takes the same arguments (the packed projection qkv,
// key padding mask, causal, prefix-LM lengths) and the same counter-hash dropout mask, and computes the same map;
// tests/nn/fused/test_flash_attention.cpp checks it against the packed and the composed paths (values, every gradient).
//
// Shape letters: B batch, T time, C channels, NH heads, HS = C / NH; c = 1/sqrt(HS); r = 1/(1 - p).
// Tiles: Br query rows x Bc keys (48 x 128; 64 x 128 for the bf16 products on AMX: flash_products.h). Per (b, h), with Q' = c Q:
//   forward, for each query block i, over the key blocks j it may see:
//     S    = Q'_i K_j^T                          (Br, Bc)  a small gemm, in L1/L2
//     S_ts = -1e9 at padding keys (as the composed masked_fill), keys s >= row_keys(t) left out
//     m'   = max(m, max_s S_ts);  a = e^(m - m');  P_ts = e^(S_ts - m')
//     l    = a l + sum_s P_ts
//     O_i  = a O_i + (P * M) V_j                 (Br, HS)  M = r keep(b, h, t, s) or 1, the packed path's hash
//   then O_i /= l and L_t = m + log l is saved (T floats): nothing T x T exists, not even per thread.
//   backward (key blocks outer, query blocks inner; D_t = dO_t . O_t precomputed from the saved output):
//     P    = e^(S - L) (recomputed),  Pd = P * M
//     in the forward this was O = Pd V, so     dV_j += Pd^T dO_i,   dPd = dO_i V_j^T,   dP = dPd * M
//     softmax backward                          dS = P * (dP - D)   (0 at padding keys: the fill is a constant)
//     S = c Q K^T, so                           dQ_i += c dS K_j,    dK_j += dS^T Q'_i   (= c dS^T Q_i)
// The products run on a register-tiled micro-kernel (a row block of 6 or 12 rows times 64 or 32 columns held in
// 24 vector accumulators; AVX-512 when the build has it, else AVX2), not on OpenBLAS: a tile is too small for
// sgemm's packing to pay off. Under Precision::bf16 where the CPU computes in bf16 (tensor/bf16.h: AVX512_BF16, not
// DL_BF16=off) the five products take bf16 operands with float32 sums instead, on VDPBF16PS tiles, as PyTorch's CPU
// autocast runs attention's bmm: c q, k, v, dO and the tiles P, P M and dS are rounded to bf16; the softmax statistics,
// L, D, the output and gradient accumulators stay float32 (nn/fused/flash_products.h lists each operand and when it is
// rounded), and the exponentials are nn/fused/softmax_exp.h's, good to 1e-5 where P is then rounded to 2^-8. The
// choice is made in the forward and kept for its backward; in float32 mode the bits are the same as before the bf16
// path existed. One (b, h) pair runs on one OpenMP thread from start to end, so dQ, dK and dV are
// summed in one fixed order and the result does not depend on the thread count. Memory per thread O(T HS): the
// packed copies of one head's q, k, v, dO and the dQ accumulator. Causal: key blocks above the diagonal are skipped,
// and a tile is computed only over the rows that exist (T need not fill the last block) and the keys its last row
// may see, in whole vectors: at T = 256 that is 63% of the 48 x 128 tiles' work (the triangle itself is 50%).
// A row whose keys are all padding gets uniform weights over its keys (the -1e9 fill everywhere), as in the packed
// path. A window (the band |t - s| <= w, Longformer-style local attention) is one more bound on a row's keys: the
// keys before t - w get -inf (P = 0 exactly), and a query block's key loop starts at the block holding its first
// row's t - w, so at T = 1024, w = 128 a 48-row block visits 3-4 key blocks of 8.
// On a device, qkv there: the backend's attention primitive (the same map, masks, dropout draw, window and all-padding
// rule, head size <= 128: tensor-core tiles of 16 rows in 3xTF32 at head sizes 16, 32 and 64, cuda/ops/attention_tc.cuh,
// else one thread per query row or key, cuda/ops/attention.cuh), both checked against this kernel by
// tests/cuda_logic/test_device_kernels.cpp.
// What it is not: cross-attention, an additive bias, returned weights, float64 (use the composed path).
#pragma once
#include "autograd/ops.h"

namespace dl::nn {

// The largest head size of the device's attention primitive (cuda/ops/attention.cuh's kAttnMaxHead); larger heads take
// the composed path on a device (nn/attention/attention.h's path table).
inline constexpr int64_t kDeviceFlashMaxHead = 128;

// qkv (B, T, 3C) f32 (CPU or device) -> (B, T, C); the arguments mean what they mean for qkv_attention (same dropout draw from
// g: one u64 per training call with p > 0, so both primitives give the same mask for the same generator state).
// window > 0: row t also sees only the keys with |t - s| <= window, as the composed path's band mask
// (attention_allowed); the key blocks outside a query block's band are skipped, so the work is O(T window).
Var flash_attention(const Var& qkv, int64_t heads, bool causal, double p, bool training, Generator& g,
                    const Tensor& key_mask = Tensor(), const Tensor& prefix = Tensor(), int64_t window = 0);

// For tests: whether the bf16 products round their in-kernel tiles (P, P M, dS) with VCVTNE2PS2BF16 where the build has
// AVX512_BF16 (the default; flash_products.h) or with tensor/bf16_tiles.h's integer packings, the plain twin. Returns the
// setting before; the products' bits are the same either way (tests/nn/fused/test_flash_attention_bf16.cpp).
bool flash_attention_hardware_rounding(bool on);

}  // namespace dl::nn
