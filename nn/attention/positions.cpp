// nn/attention/positions.cpp - absolute and rotary positions (formulas in nn/attention/positions.h).
#include "nn/attention/positions.h"

#include <cmath>

#include "autograd/shape_ops.h"
#include "nn/init.h"

namespace dl::nn {

Tensor sinusoidal_table(int64_t T, int64_t C, DType dtype) {
  if (C % 2) fail("sinusoidal_table: C must be even, found " + std::to_string(C));
  Tensor pe = zeros({T, C}, DType::f64);
  double* p = pe.data<double>();
  for (int64_t t = 0; t < T; t++)
    for (int64_t i = 0; i < C / 2; i++) {
      double w = std::pow(10000.0, -2.0 * i / (double)C);
      p[t * C + 2 * i] = std::sin(t * w);
      p[t * C + 2 * i + 1] = std::cos(t * w);
    }
  return pe.to(dtype);
}

Var SinusoidalPositions::forward(const Var& x) const {
  return x + Var(sinusoidal_table(x.size(-2), x.size(-1), x.dtype()));  // (T, C) broadcasts over B
}

LearnedPositions::LearnedPositions(int64_t n, int64_t d, Generator& g, double std) : max_len(n), dim(d) {
  weight = register_parameter("weight", init::normal({n, d}, std, g));
}

Var LearnedPositions::forward(const Var& x) const {
  int64_t T = x.size(-2);
  if (T > max_len || x.size(-1) != dim)
    fail("LearnedPositions: input " + shape_str(x.shape()) + " needs T <= max_len = " + std::to_string(max_len) +
         " and C = " + std::to_string(dim));
  return x + narrow(weight, 0, 0, T);
}

Var apply_rotary(const Var& x, int64_t offset) {
  if (x.dim() != 4 || x.size(3) % 2) fail("apply_rotary: expected (B, NH, T, HS) with HS even, found " + shape_str(x.shape()));
  const int64_t B = x.size(0), NH = x.size(1), T = x.size(2), HS = x.size(3);
  Tensor c = zeros({T, HS / 2}, DType::f64), s = zeros({T, HS / 2}, DType::f64);
  for (int64_t t = 0; t < T; t++)
    for (int64_t i = 0; i < HS / 2; i++) {
      double a = (double)(t + offset) * std::pow(10000.0, -2.0 * i / (double)HS);  // (t + offset) theta_i
      c.data<double>()[t * (HS / 2) + i] = std::cos(a);
      s.data<double>()[t * (HS / 2) + i] = std::sin(a);
    }
  Var cv(c.to(x.dtype()).to(x.data().device())), sv(s.to(x.dtype()).to(x.data().device()));  // built on the host, used where x is
  Var x2 = reshape(x, {B, NH, T, HS / 2, 2});
  Var xe = select(x2, 4, 0), xo = select(x2, 4, 1);  // x[2i], x[2i+1]: (B, NH, T, HS/2)
  Var ye = xe * cv - xo * sv;
  Var yo = xe * sv + xo * cv;
  return reshape(stack({ye, yo}, -1), {B, NH, T, HS});
}

}  // namespace dl::nn
