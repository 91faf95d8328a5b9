// nn/fused/glu.h - the gated linear unit as one autograd node on the CPU (Dauphin et al. 2017, arXiv 1612.08083):
//   x = [a, b] split along the last dim (2n -> n + n),   y = a * sigmoid(b)
//   backward, with s = sigmoid(b) recomputed from the saved x:   da = dy s,   db = dy a s (1 - s)
// The composed twin is nn::glu's narrow * sigmoid(narrow) (nn/layers.h), three nodes that write s, the product and,
// in the backward, a zero-filled (…, 2n) gradient per half; this node reads x once forward and once backward and
// keeps only x (which the composed path keeps alive too, through its views). S4/S4D's output (nn/ssm) runs it: GLU was
// 11% of an S4D training step op by op (narrow 3.7%, sigmoid 2.4%, mul 4.9%; docs/performance.md).
// float32 and float64 on the CPU, any layout (made contiguous); the sigmoid is the one the composed path uses (exp_fast
// in float32), so the forward agrees with it exactly. tests/nn/fused/test_glu.cpp: against the composed twin (values,
// gradients) and finite differences.
#pragma once
#include "autograd/ops.h"

namespace dl::nn {

// x (..., 2n) on the CPU, f32 or f64 -> (..., n). Fails naming the shape when the last dim is odd.
Var glu_fused(const Var& x);

// What the layers call: glu_fused where it runs (CPU, f32/f64), the composed nn::glu elsewhere (other devices, dtypes).
// The dispatch lives here, not in nn::glu, because the base layers (nn/*.h) may not include the fused wing.
Var glu_fast(const Var& x);

}  // namespace dl::nn
