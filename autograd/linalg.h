// autograd/linalg.h - differentiable matrix products (kernels and folding strategy: tensor/linalg.h).
//
// Gradient formulas (dy = upstream gradient, shapes as in the forward):
//   matmul  y = a @ b         da = dy @ b^T   summed over the batch dims a was broadcast along
//                             db = a^T @ dy   summed over the batch dims b was broadcast along
//           (1-D a or b: the forward treats them as (1, K) / (K, 1) and drops that dim; the backward
//            puts it back, so da and db have a's and b's shapes)
//   linear  y = x @ w^T + b   dx = dy @ w     dw = dy^T @ x summed over all leading dims     db = sum of dy over them
// Each is one primitive, so its node saves only its inputs (no intermediate) and the backward is two sgemms.
#pragma once
#include "autograd/variable.h"
#include "tensor/linalg.h"

namespace dl {

Var matmul(const Var& a, const Var& b);
Var linear(const Var& x, const Var& w, const Var& bias = Var());  // bias may be undefined

}  // namespace dl
