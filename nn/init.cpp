// nn/init.cpp - see init.h for the formulas.
#include "nn/init.h"

#include <cmath>
#include <vector>

namespace dl::nn::init {

static int64_t receptive(const Shape& s) {
  int64_t r = 1;
  for (size_t i = 2; i < s.size(); i++) r *= s[i];
  return r;
}
int64_t fan_in(const Shape& s) {
  if (s.size() < 2) fail("init: fan_in needs a weight of rank >= 2, got " + shape_str(s));
  return s[1] * receptive(s);
}
int64_t fan_out(const Shape& s) {
  if (s.size() < 2) fail("init: fan_out needs a weight of rank >= 2, got " + shape_str(s));
  return s[0] * receptive(s);
}
Tensor normal(const Shape& s, double std, Generator& g) { return dl::normal(s, 0.0, std, g); }
Tensor uniform(const Shape& s, double a, Generator& g) { return dl::uniform(s, -a, a, g); }
Tensor xavier_uniform(const Shape& s, Generator& g, double gain) {
  return uniform(s, gain * std::sqrt(6.0 / double(fan_in(s) + fan_out(s))), g);
}
Tensor xavier_normal(const Shape& s, Generator& g, double gain) {
  return normal(s, gain * std::sqrt(2.0 / double(fan_in(s) + fan_out(s))), g);
}
Tensor kaiming_uniform_linear(const Shape& s, Generator& g) { return uniform(s, 1.0 / std::sqrt((double)fan_in(s)), g); }

// Orthogonal rows (or columns, whichever is fewer) via modified Gram-Schmidt in double precision, which
// gives the Q of a QR decomposition; multiplying by sign(diag(R)) makes Q uniformly distributed (Mezzadri 2007).
Tensor orthogonal(const Shape& s, Generator& g, double gain) {
  if (s.size() < 2) fail("init.orthogonal: needs a weight of rank >= 2, got " + shape_str(s));
  int64_t rows = s[0], cols = shape_numel(s) / rows;
  bool transposed = rows < cols;                                       // orthonormalise the longer side's vectors
  int64_t n = transposed ? cols : rows, k = transposed ? rows : cols;  // k vectors of length n
  std::vector<double> a((size_t)(n * k));
  for (auto& v : a) v = g.normal();
  // columns j of an (n x k) matrix stored column-major: a[j * n + i]
  for (int64_t j = 0; j < k; j++) {
    double* q = &a[(size_t)(j * n)];
    for (int64_t p = 0; p < j; p++) {
      const double* qp = &a[(size_t)(p * n)];
      double d = 0;
      for (int64_t i = 0; i < n; i++) d += qp[i] * q[i];
      for (int64_t i = 0; i < n; i++) q[i] -= d * qp[i];
    }
    double norm = 0;
    for (int64_t i = 0; i < n; i++) norm += q[i] * q[i];
    norm = std::sqrt(norm);
    // sign(diag(R)) is +1 by construction of Gram-Schmidt (R_jj = norm > 0)
    for (int64_t i = 0; i < n; i++) q[i] /= norm;
  }
  Tensor out = Tensor::empty(s, DType::f32);
  float* o = out.data<float>();
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      // out (rows x cols): if transposed, row r is vector r; else column c is vector c
      double v = transposed ? a[(size_t)(r * n + c)] : a[(size_t)(c * n + r)];
      o[r * cols + c] = (float)(gain * v);
    }
  return out;
}

}  // namespace dl::nn::init
