// autograd/shape_ops.h - differentiable shape ops (kernels and exact semantics: tensor/shape_ops.h).
//
// Gradient formulas (each op only moves elements, so the gradient moves them back):
//   cat(xs, d)           dx_i = dy.narrow(d, offset_i, size_i)
//   pad(x, pads, v)      dx = pad(dy, -pads)        (the crop of dy where x landed; no gradient to v)
//   flip(x, dims)        dx = flip(dy, dims)
//   roll(x, s, d)        dx = roll(dy, -s, d)
//   cumsum(x, d)         dx_j = sum_{i>=j} dy_i = reverse cumsum of dy   (y_i = sum_{j<=i} x_j)
// Compositions (no backward of their own): stack = cat of unsqueezes; split = narrows (views);
// repeat_interleave = reshape(expand(unsqueeze)), whose expand sums the repeats back.
#pragma once
#include "autograd/variable.h"
#include "tensor/shape_ops.h"

namespace dl {

Var cat(const std::vector<Var>& xs, int64_t dim);
Var stack(const std::vector<Var>& xs, int64_t dim);
std::vector<Var> split(const Var& x, const std::vector<int64_t>& sizes, int64_t dim);
std::vector<Var> split(const Var& x, int64_t chunk, int64_t dim);
Var pad(const Var& x, const std::vector<int64_t>& pads, double value = 0.0);
Var flip(const Var& x, const std::vector<int64_t>& dims);
Var roll(const Var& x, int64_t shift, int64_t dim);
Var cumsum(const Var& x, int64_t dim);
Var repeat_interleave(const Var& x, int64_t repeats, int64_t dim);

}  // namespace dl
