// autograd/views.h - differentiable views (they share storage with their input; see tensor.h's box).
//
// Gradients: a view moves elements without changing them, so the gradient moves them back:
//   reshape/view/flatten/squeeze/unsqueeze  dx = dy.reshape(x.shape)
//   permute(p) / transpose                  dx = dy.permute(inverse(p))
//   narrow(d, s, n) / select(d, i)          dx = zeros(x.shape); dx.narrow(d, s, n) = dy
//   expand(shape)                           dx = sum_to(dy, x.shape)
//   contiguous                              dx = dy
#pragma once
#include "autograd/variable.h"

namespace dl {

Var reshape(const Var& x, const Shape& shape);
Var flatten(const Var& x, int64_t start = 0, int64_t end = -1);
Var permute(const Var& x, const std::vector<int64_t>& dims);
Var transpose(const Var& x, int64_t d0, int64_t d1);
Var narrow(const Var& x, int64_t dim, int64_t start, int64_t length);
Var select(const Var& x, int64_t dim, int64_t index);
Var expand(const Var& x, const Shape& shape);
Var squeeze(const Var& x, int64_t dim);
Var unsqueeze(const Var& x, int64_t dim);
Var contiguous(const Var& x);

}  // namespace dl
