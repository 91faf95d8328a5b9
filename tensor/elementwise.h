// tensor/elementwise.h - elementwise kernels on Tensors (no autograd): broadcasting binary arithmetic,
// unary math, comparisons, where, clamp, and the strided copy everything else is built on.
//
// Broadcasting follows NumPy/PyTorch: shapes are aligned at the right, a dim of size 1 stretches.
// Results are fresh contiguous tensors. Inputs may be any view. Both cores are used above ~32K elements.
// Comparisons return 0/1 in the inputs' dtype (no bool dtype: masks multiply directly).
#pragma once
#include <functional>

#include "tensor/backend.h"
#include "tensor/tensor.h"

namespace dl {

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
void copy_into(const Tensor& dst, const Tensor& src);  // dst[...] = src (src broadcast to dst's shape)

// ---- binary, broadcasting ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);  // a^b
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);  // cond != 0 ? a : b

// ---- with a scalar ----
Tensor add_scalar(const Tensor& a, double s);
Tensor mul_scalar(const Tensor& a, double s);
Tensor pow_scalar(const Tensor& a, double p);      // a^p
Tensor rpow_scalar(double base, const Tensor& a);  // base^a
Tensor clamp(const Tensor& a, double lo, double hi);
Tensor masked_fill(const Tensor& a, const Tensor& mask, double value);  // mask != 0 -> value (mask broadcasts)

// ---- unary ----
Tensor unary(UnaryOp op, const Tensor& x);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x, bool tanh_approx = false);
Tensor silu(const Tensor& x);
Tensor softplus(const Tensor& x);
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor sign(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
// d/dx of the unary op at x (with y = op(x) given for ops whose derivative is cheapest from y), times dy.
Tensor unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& dy);

// In-place accumulate: dst += src (src broadcasts to dst). Used for gradient accumulation.
void add_(const Tensor& dst, const Tensor& src);

// Sum a broadcast gradient back to `shape` (the inverse of broadcasting): sums leading dims and dims
// where shape has 1. Used by every broadcasting op's backward.
Tensor sum_to(const Tensor& g, const Shape& shape);

// Generic elementwise map over contiguous outputs (used by kernels in other files).
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& f);

}  // namespace dl
