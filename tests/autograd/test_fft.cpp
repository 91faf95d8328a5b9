// tests/autograd/test_fft.cpp - rfft/irfft (odd/even n, n larger and smaller than the input), complex helpers
// and fft_conv: finite differences and PyTorch fixtures; fft_conv == direct causal convolution; rfft == naive
// DFT; the plan cache under concurrent callers.
#include <cmath>
#include <thread>

#include "op_harness.h"

using namespace dl;
using namespace dl::test;

// clang-format off
static std::vector<OpCase> fft_cases() {
  auto rf = [](int64_t n) { return [n](const std::vector<Var>& x) { return rfft(x[0], n); }; };
  auto irf = [](int64_t n) { return [n](const std::vector<Var>& x) { return irfft(x[0], n); }; };
  return {
      {"rfft_even", {randn_input({3, 8})}, rf(-1)},
      {"rfft_odd", {randn_input({3, 7})}, rf(-1)},
      {"rfft_pad", {randn_input({2, 5})}, rf(8)},
      {"rfft_trunc", {randn_input({2, 9})}, rf(6)},
      {"rfft_odd_pad", {randn_input({2, 4})}, rf(7)},
      {"irfft_even", {randn_input({3, 5, 2})}, irf(-1)},
      {"irfft_odd", {randn_input({3, 4, 2})}, irf(7)},
      {"irfft_pad", {randn_input({2, 3, 2})}, irf(10)},
      {"irfft_trunc", {randn_input({2, 6, 2})}, irf(4)},
      {"fft_conv", {randn_input({2, 3, 8}), randn_input({3, 8})}, [](auto& x) { return fft_conv(x[0], x[1], 8); }},
      {"complex_exp_div", {randn_input({3, 2}, 0.5), randn_input({3, 2})},
       [](auto& x) { return as_real(cdiv(cexp(as_complex(x[0])), as_complex(x[1]))); }},
  };
}
// clang-format on

DL_OP_TESTS(Fft, fft_cases());

// y[..., t] = sum_{s <= t} k[..., s] u[..., t - s]
static Tensor direct_causal_conv(const Tensor& u, const Tensor& k) {
  int64_t L = u.size(-1), R = u.numel() / L;
  Tensor uc = u.to(DType::f64).contiguous(), kc = k.to(DType::f64).expand(u.shape()).contiguous();
  Tensor y = zeros(u.shape(), DType::f64);
  for (int64_t r = 0; r < R; r++)
    for (int64_t t = 0; t < L; t++) {
      double s = 0;
      for (int64_t j = 0; j <= t; j++) s += kc.data<double>()[r * L + j] * uc.data<double>()[r * L + t - j];
      y.data<double>()[r * L + t] = s;
    }
  return y;
}

TEST(FftAgree, FftConvEqualsDirectCausalConvolution) {
  Generator g(21);
  for (int64_t L : {1, 2, 7, 64, 301}) {
    Tensor u = randn({2, 3, L}, g, DType::f64), k = randn({3, L}, g, DType::f64);
    Var y = fft_conv(Var(u), Var(k), L);
    EXPECT_TRUE(all_close(y.data(), direct_causal_conv(u, k), kAgreeF64, "fft_conv f64 L=" + std::to_string(L)));
  }
  // float32, a long kernel: rounding ~ eps_f32 * log2(n) * |sum of |terms||
  Tensor u = randn({4, 1000}, g), k = mul_scalar(randn({4, 1000}, g), 0.05);
  Var y = fft_conv(Var(u), Var(k), 1000);
  EXPECT_TRUE(all_close(y.data(), direct_causal_conv(u, k), Tol{1e-3, 1e-4}, "fft_conv f32 L=1000"));
}

TEST(FftAgree, RfftEqualsNaiveDft) {
  Generator g(22);
  for (int64_t n : {1, 2, 5, 8, 15, 16}) {
    Tensor x = randn({3, n}, g, DType::f64);
    Tensor X = rfft(x, n), ref = zeros({3, n / 2 + 1, 2}, DType::f64);
    for (int64_t r = 0; r < 3; r++)
      for (int64_t k = 0; k <= n / 2; k++) {
        double re = 0, im = 0;
        for (int64_t t = 0; t < n; t++) {
          double a = -2 * M_PI * (double)(k * t) / (double)n;
          re += x.at({r, t}) * std::cos(a);
          im += x.at({r, t}) * std::sin(a);
        }
        ref.data<double>()[(r * (n / 2 + 1) + k) * 2] = re;
        ref.data<double>()[(r * (n / 2 + 1) + k) * 2 + 1] = im;
      }
    EXPECT_TRUE(all_close(X, ref, kAgreeF64, "rfft n=" + std::to_string(n)));
    EXPECT_TRUE(all_close(irfft(X, n), x, kAgreeF64, "irfft(rfft(x)) n=" + std::to_string(n)));
  }
}

TEST(FftAgree, LargeBatchedMatchesRowByRow) {  // the multithreaded chunked path vs one row at a time
  Generator g(23);
  for (int64_t n : {63, 64}) {
    Tensor x = randn({1001, n}, g);
    Tensor X = rfft(x, n);
    for (int64_t r : {0, 1, 500, 1000})
      EXPECT_TRUE(all_close(X.select(0, r), rfft(x.select(0, r).clone(), n), kAgreeF32, "row " + std::to_string(r)));
    EXPECT_TRUE(all_close(irfft(X, n), x, kAgreeF32, "roundtrip n=" + std::to_string(n)));
  }
}

TEST(Fft, PlanCacheIsThreadSafe) {
  Generator g(24);
  std::vector<Tensor> xs;
  for (int i = 0; i < 8; i++) xs.push_back(randn({3, 10 + i}, g, i % 2 ? DType::f64 : DType::f32));
  std::vector<Tensor> expect;
  for (auto& x : xs) expect.push_back(irfft(rfft(x, 2 * x.size(-1)), 2 * x.size(-1)));
  std::vector<std::thread> th;
  std::vector<int> ok(8, 0);
  for (int i = 0; i < 8; i++)
    th.emplace_back([&, i] {
      for (int rep = 0; rep < 20; rep++) {
        Tensor y = irfft(rfft(xs[i], 2 * xs[i].size(-1) + rep), 2 * xs[i].size(-1) + rep);
        if (rep == 0) ok[i] = (bool)all_close(y, expect[i], kAgreeF32, "thread");
      }
    });
  for (auto& t : th) t.join();
  for (int i = 0; i < 8; i++) EXPECT_TRUE(ok[i]) << i;
  EXPECT_GT(fft_plan_cache_size(), 0u);
}

TEST(FftErrors, ComplexInputNeedsTrailingTwo) {
  EXPECT_THROW(irfft(ones({3, 4})), ShapeError);
  EXPECT_THROW(rfft(ones({3, 4}), 0), ShapeError);
}
