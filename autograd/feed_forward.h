// autograd/feed_forward.h - a Transformer's feed-forward block as one op:
//   y = linear(dropout(gelu(linear(x, w1, b1)), p), w2, b2)     x (..., C), w1 (H, C), b1 (H), w2 (O, H), b2 (O)
// with GELU's erf form and the dropout op's mask (drawn from g as the dropout op draws it, only when training and
// p > 0). torch.nn.TransformerEncoderLayer's FF and nn::FeedForward are this.
//
// Under the bf16 products (tensor/bf16.h) on the CPU, with both weights trained, it is one node, and the hidden
// activations that the four ops would write and read in float32 are not written:
//   forward    h = x w1^T + b1 (kept, for GELU's derivative);  d = dropout(gelu(h)) made 16 rows at a time and
//              rounded at once to the bf16 pair words the second product reads (bf16_pack_both_rows), its
//              across-row words kept for dw2 as the linear layer keeps its input;  y = d w2^T + b2
//   backward   dd = dy w2 (float32);  dh = (dd m) gelu'(h) made 16 rows at a time and rounded at once to the pair
//              words of dw1 = dh^T x and dx = dh w1, db1 summed on the way;  d and dh never exist in float32
// What PyTorch's autocast gets from keeping these activations in bf16; here they are float32 in registers and L1, and
// bf16 in memory. Each number is the four ops' number, bit for bit (the same formulas from tensor/nn_kernels.h, the
// same roundings and sums: tests/autograd/test_feed_forward.cpp), so a run does not change with the fusion.
// Elsewhere (float32 or float64 products, a device, a frozen weight, no gradient) it is the four ops composed.
#pragma once
#include "autograd/variable.h"

namespace dl {

Var feed_forward(const Var& x, const Var& w1, const Var& b1, const Var& w2, const Var& b2, double p, bool training, Generator& g);

}  // namespace dl
