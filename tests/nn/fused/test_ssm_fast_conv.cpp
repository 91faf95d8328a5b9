// tests/nn/fused/test_ssm_fast_conv.cpp - the fast SSM convolution (nn/ssm/ssm_ops.h ssm_conv_fast: float32,
// batched fftwf plans over blocks of 16 channels) against its plain twin ssm_conv_plain (float64, one FFT per
// (b, h) row). Forward and every gradient (u, K, D); causal and bidirectional; with and without the D skip;
// odd L, L = 1, H not a multiple of the block; gradients requested for only some inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "nn/fused/ssm_conv_fast.h"
#include "nn/ssm/ssm_ops.h"
#include "op_harness.h"
#include "tolerance.h"

using namespace dl;
using namespace dl::test;
using namespace dl::nn;

namespace {

// Float32 FFT rounding is relative to the size of the whole signal, not of each element (an output near zero
// carries about the same absolute error as a large one), so the absolute part of kAgreeF32 is scaled by the
// largest |expected|.
::testing::AssertionResult agree(const Tensor& fast, const Tensor& plain, const std::string& what) {
  Tensor p = plain.to(DType::f64).contiguous();
  double big = 0;
  for (int64_t i = 0; i < p.numel(); i++) big = std::max(big, std::abs(p.data<double>()[i]));
  return all_close(fast.to(DType::f64), p, Tol{kAgreeF32.rtol, kAgreeF32.atol * std::max(big, 1.0)}, what);
}

struct Case {
  int64_t B, L, H;
  bool bidir, with_D;
};

std::string name(const Case& c) {
  return "B=" + std::to_string(c.B) + " L=" + std::to_string(c.L) + " H=" + std::to_string(c.H) +
         (c.bidir ? " bidir" : " causal") + (c.with_D ? " D" : "");
}

// Runs ssm_conv_fast and ssm_conv_plain on the same float32 inputs and dy; compares y and the gradients of
// the inputs that `grad` (u, k, D) asks for.
void expect_agree(const Case& c, std::array<bool, 3> grad = {true, true, true}) {
  Generator g(c.B * 1000 + c.L * 10 + c.H);
  Tensor u = randn({c.B, c.L, c.H}, g), k = randn({c.bidir ? 2 : 1, c.H, c.L}, g), D = randn({c.H}, g);
  Tensor dy = randn({c.B, c.L, c.H}, g);
  auto run = [&](auto conv) {
    Var vu(u, grad[0]), vk(k, grad[1]), vD = c.with_D ? Var(D, grad[2]) : Var();
    Var y = conv(vu, vk, vD);
    y.backward(dy);
    return std::vector<Tensor>{y.data(), grad[0] ? vu.grad() : Tensor(), grad[1] ? vk.grad() : Tensor(),
                               c.with_D && grad[2] ? vD.grad() : Tensor()};
  };
  auto fast = run(ssm_conv_fast), plain = run(ssm_conv_plain);
  EXPECT_EQ(fast[0].dtype(), DType::f32);
  EXPECT_TRUE(agree(fast[0], plain[0], name(c) + " y"));
  const char* what[] = {"", " du", " dk", " dD"};
  for (int i = 1; i < 4; i++) {
    ASSERT_EQ(fast[i].defined(), plain[i].defined()) << name(c) << what[i];
    if (plain[i].defined()) {
      EXPECT_TRUE(agree(fast[i], plain[i], name(c) + what[i]));
    }
  }
}

}  // namespace

TEST(SsmFastConv, AgreesWithPlain) {
  const std::vector<std::array<int64_t, 3>> shapes = {{2, 7, 3}, {1, 1, 5}, {3, 33, 20}, {2, 100, 37}, {4, 256, 16}};
  for (auto [B, L, H] : shapes)
    for (bool bidir : {false, true})
      for (bool with_D : {false, true}) expect_agree({B, L, H, bidir, with_D});
}

TEST(SsmFastConv, SomeGradients) {
  for (bool bidir : {false, true}) {
    expect_agree({2, 33, 18, bidir, true}, {true, false, false});  // du only
    expect_agree({2, 33, 18, bidir, true}, {false, true, false});  // dk only
    expect_agree({2, 33, 18, bidir, true}, {false, false, true});  // dD only
  }
}

// ssm_conv runs the fast path for float32 input and the plain one for float64.
TEST(SsmFastConv, DispatchByDtype) {
  Generator g(3);
  Tensor u = randn({2, 20, 4}, g), k = randn({1, 4, 20}, g), D = randn({4}, g);
  EXPECT_TRUE(agree(ssm_conv(Var(u), Var(k), Var(D)).data(), ssm_conv_fast(Var(u), Var(k), Var(D)).data(), "f32"));
  Tensor u64 = u.to(DType::f64);
  Tensor y64 = ssm_conv(Var(u64), Var(k), Var(D)).data();
  EXPECT_EQ(y64.dtype(), DType::f64);
  EXPECT_TRUE(all_close(y64, ssm_conv_plain(Var(u64), Var(k), Var(D)).data(), kAgreeF64, "f64"));
}
