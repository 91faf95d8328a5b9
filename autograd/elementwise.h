// autograd/elementwise.h - differentiable elementwise primitives.
//
// Gradient formulas (y = f(x), dy = upstream gradient; broadcast inputs get sum_to(their shape)):
//   add   y = a + b          da = dy                 db = dy
//   sub   y = a - b          da = dy                 db = -dy
//   mul   y = a * b          da = dy * b             db = dy * a
//   div   y = a / b          da = dy / b             db = -dy * a / b^2
//   pow   y = x^p (scalar p) dx = dy * p * x^(p-1)
//   unary ops                dx = dy * f'(x)   (the list is in tensor/elementwise.cpp, unary_backward)
//   where y = c ? a : b      da = dy * c             db = dy * (1 - c)     (no gradient to c)
//   clamp y = min(max(x,lo),hi)  dx = dy where lo <= x <= hi, else 0
#pragma once
#include "autograd/variable.h"

namespace dl {

Var add(const Var& a, const Var& b);
Var sub(const Var& a, const Var& b);
Var mul(const Var& a, const Var& b);
Var div(const Var& a, const Var& b);
Var neg(const Var& x);
Var add_scalar(const Var& x, double s);
Var mul_scalar(const Var& x, double s);
Var pow(const Var& x, double p);
Var exp(const Var& x);
Var log(const Var& x);
Var sqrt(const Var& x);
Var rsqrt(const Var& x);
Var abs(const Var& x);
Var tanh(const Var& x);
Var sigmoid(const Var& x);
Var relu(const Var& x);
Var gelu(const Var& x, bool tanh_approx = false);
Var silu(const Var& x);
Var softplus(const Var& x);
Var elu(const Var& x, double alpha = 1.0);
Var clamp(const Var& x, double lo, double hi);
Var where(const Tensor& cond, const Var& a, const Var& b);
Var masked_fill(const Var& x, const Tensor& mask, double value);  // mask != 0 -> value; no grad there
Var sin(const Var& x);
Var cos(const Var& x);

inline Var operator+(const Var& a, const Var& b) { return add(a, b); }
inline Var operator-(const Var& a, const Var& b) { return sub(a, b); }
inline Var operator*(const Var& a, const Var& b) { return mul(a, b); }
inline Var operator/(const Var& a, const Var& b) { return div(a, b); }
inline Var operator-(const Var& a) { return neg(a); }
inline Var operator+(const Var& a, double s) { return add_scalar(a, s); }
inline Var operator+(double s, const Var& a) { return add_scalar(a, s); }
inline Var operator-(const Var& a, double s) { return add_scalar(a, -s); }
inline Var operator-(double s, const Var& a) { return add_scalar(neg(a), s); }
inline Var operator*(const Var& a, double s) { return mul_scalar(a, s); }
inline Var operator*(double s, const Var& a) { return mul_scalar(a, s); }
inline Var operator/(const Var& a, double s) { return mul_scalar(a, 1.0 / s); }

}  // namespace dl
