// tests/autograd/test_gelu_dropout.cpp - gelu_dropout (autograd/nn_ops.h), dropout(gelu(x)) in one pass each way,
// against the two ops it replaces: the same draw of the generator, the same y and the same gradient, bit for bit
// (the fused path is only a speed-up: every run that used the two ops gives the same numbers with it).
#include <omp.h>

#include <cmath>

#include "autograd/elementwise.h"
#include "autograd/nn_ops.h"
#include "op_harness.h"

using namespace dl;
using namespace dl::test;

namespace {

Tensor randn_scaled(const Shape& s, uint64_t seed, double scale) {  // |x| up to ~4 scale: erf saturates at ~3
  Generator g(seed);
  return mul_scalar(randn(s, g), scale);
}

struct Pass {
  Tensor y, dx;
  uint64_t next;  // the generator's next draw after the op: both must draw the same number of values
};

Pass pass(bool fused, const Tensor& x0, const Tensor& dy, double p, bool training, uint64_t seed) {
  Generator g(seed);
  Var x(x0, true);
  Var y = fused ? gelu_dropout(x, p, training, g) : dropout(gelu(x), p, training, g);
  y.backward(dy);
  return {y.data(), x.grad(), g.next_u64()};
}

}  // namespace

// f32 and f64; sizes that end inside a 32-element half word, inside a 4096-element draw row and past one; p from
// 0.1 to 1; 1 and 2 threads; a non-contiguous input (a transposed view); and with dropout off (eval, p = 0) the
// plain gelu. Values cover GELU's whole shape (standard deviation 2: erf saturates at |x| ~ 4).
TEST(GeluDropout, IsDropoutOfGeluBitForBit) {
  const int prev = omp_get_max_threads();
  for (int threads : {1, 2})
    for (DType dt : {DType::f32, DType::f64})
      for (int64_t n : {int64_t(1), int64_t(45), int64_t(4096), int64_t(3 * 4096 + 37)})
        for (double p : {0.1, 0.5, 1.0}) {
          omp_set_num_threads(threads);
          Tensor x = randn_scaled({n}, 5, 2.0).to(dt), dy = randn_scaled({n}, 9, 1.0).to(dt);
          const Pass a = pass(true, x, dy, p, true, 21), b = pass(false, x, dy, p, true, 21);
          const std::string what = std::string(dtype_name(dt)) + " n=" + std::to_string(n) + " p=" + std::to_string(p) +
                                   " threads=" + std::to_string(threads);
          ASSERT_TRUE(all_close(a.y, b.y, Tol{0, 0}, what.c_str())) << what;
          ASSERT_TRUE(all_close(a.dx, b.dx, Tol{0, 0}, what.c_str())) << what;
          EXPECT_EQ(a.next, b.next) << what;
        }
  omp_set_num_threads(prev);
  Tensor xt = randn_scaled({70, 90}, 3, 2.0).transpose(0, 1), dy = randn_scaled({90, 70}, 4, 1.0);
  const Pass a = pass(true, xt, dy, 0.3, true, 5), b = pass(false, xt, dy, 0.3, true, 5);
  EXPECT_TRUE(all_close(a.y, b.y, Tol{0, 0}, "transposed y"));
  EXPECT_TRUE(all_close(a.dx, b.dx, Tol{0, 0}, "transposed dx"));
  for (auto [p, training] : {std::pair<double, bool>{0.3, false}, {0.0, true}}) {
    const Pass f = pass(true, xt, dy, p, training, 5), c = pass(false, xt, dy, p, training, 5);
    EXPECT_TRUE(all_close(f.y, gelu(xt), Tol{0, 0}, "dropout off: gelu"));
    EXPECT_TRUE(all_close(f.dx, c.dx, Tol{0, 0}, "dropout off: gelu's gradient"));
    EXPECT_EQ(f.next, c.next) << "dropout off draws nothing";
  }
}

// The gradient against finite differences through the same mask (a fixed seed gives the same mask at every call),
// in float64, away from the kinks a dropped element does not have: a plain check that the fused backward is the
// derivative of the fused forward, independent of the composed twin.
TEST(GeluDropout, GradientIsTheFiniteDifference) {
  const int64_t n = 300;
  Tensor x = randn_scaled({n}, 7, 2.0).to(DType::f64), w = randn_scaled({n}, 8, 1.0).to(DType::f64);
  auto loss = [&](const Tensor& xv) {
    Generator g(11);
    return sum(mul(gelu_dropout(Var(xv), 0.4, true, g).data(), w)).item();
  };
  const Pass r = pass(true, x, w, 0.4, true, 11);
  const double h = 1e-6;
  const std::vector<double> xs(x.data<double>(), x.data<double>() + n);
  const double* dx = r.dx.contiguous().data<double>();
  int kept = 0;
  for (int64_t i = 0; i < n; i++) {
    kept += dx[i] != 0;
    std::vector<double> up = xs, dn = xs;
    up[i] += h, dn[i] -= h;
    const double fd = (loss(from_vector(up, {n})) - loss(from_vector(dn, {n}))) / (2 * h);
    ASSERT_NEAR(dx[i], fd, 1e-7 * (1 + std::abs(fd))) << "element " << i;
  }
  EXPECT_GT(kept, n / 2) << "p = 0.4 keeps about 180 of 300";  // the check saw kept elements, not only zeros
  EXPECT_LT(kept, n);
}

TEST(GeluDropout, BadProbabilityIsNamed) {
  Generator g(1);
  Var x(randn_scaled({4}, 1, 1.0), true);
  try {
    gelu_dropout(x, 1.5, true, g);
    FAIL() << "p = 1.5 accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("gelu_dropout: p must be in [0, 1], got 1.5"), std::string::npos) << e.what();
  }
}
