// tests/nn/ssm/test_ssm_agree.cpp - "two algorithms agree" and finite differences for the state-space primitives:
//   FFT convolution == direct convolution;  Vandermonde kernel == explicit powers;  chunked == unchunked;
//   S4D convolution mode == recurrent mode;  S4 DPLR Cauchy kernel == naive dense kernel;  S4 conv == recurrence;
//   float64 finite differences of ssm_conv, the S4D/DLR/DPLR kernels and the S4D layer's parameters.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "nn/ssm/dlr.h"
#include "nn/ssm/s4.h"
#include "nn/ssm/s4d.h"
#include "nn/ssm/s4d_minimal.h"
#include "nn/nn_test_util.h"

using namespace dl;
using namespace dl::nn;
using dl::test::all_close;

namespace {

test::OpCase conv_case(bool bidir, bool with_D) {
  test::OpCase c;
  c.name = std::string("ssm_conv") + (bidir ? "_bidir" : "") + (with_D ? "_D" : "");
  const int64_t B = 2, L = 7, H = 3;
  c.inputs = {test::randn_input({B, L, H}), test::randn_input({bidir ? 2 : 1, H, L})};
  if (with_D) c.inputs.push_back(test::randn_input({H}));
  c.f = [with_D](const std::vector<Var>& v) { return ssm_conv(v[0], v[1], with_D ? v[2] : Var()); };
  return c;
}

}  // namespace

TEST(SsmConv, FftEqualsDirect) {
  Generator g(1);
  for (bool bidir : {false, true}) {
    for (int64_t L : {1, 5, 16, 33}) {
      Tensor u = randn({2, L, 3}, g, DType::f64), k = randn({bidir ? 2 : 1, 3, L}, g, DType::f64), D = randn({3}, g, DType::f64);
      Tensor fast = ssm_conv(Var(u), Var(k), Var(D)).data();
      EXPECT_TRUE(all_close(fast, ssm_conv_direct(u, k, D), test::kAgreeF64, "L=" + std::to_string(L)));
    }
  }
}

TEST(SsmConv, FiniteDifferences) {
  for (bool bidir : {false, true})
    for (bool d : {false, true}) EXPECT_TRUE(test::gradcheck(conv_case(bidir, d), false));
}

TEST(SsmConv, BadShapesNameTheOp) {
  Tensor u = zeros({2, 8, 3}), k = zeros({1, 4, 8});
  try {
    ssm_conv(Var(u), Var(k), Var());
    FAIL() << "expected an error";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("ssm_conv"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[1, 4, 8]"), std::string::npos) << e.what();
  }
}

// ---- S4D kernel ----
namespace {
struct DiagInputs {
  Tensor log_dt, a_re, A_imag, B, C;
};
DiagInputs diag_inputs(int64_t Cc, int64_t H, int64_t N2, Generator& g) {
  return {uniform({H}, std::log(1e-2), std::log(0.5), g, DType::f64), uniform({H, N2}, -1.5, 0.5, g, DType::f64),
          uniform({H, N2}, 0.0, 6.0, g, DType::f64), randn({H, N2, 2}, g, DType::f64), randn({Cc, H, N2, 2}, g, DType::f64)};
}
}  // namespace

TEST(S4DKernel, VandermondeEqualsExplicitPowers) {
  Generator g(2);
  for (auto disc : {Discretization::zoh, Discretization::bilinear}) {
    const int64_t Cc = 2, H = 3, N2 = 4, L = 50;
    DiagInputs in = diag_inputs(Cc, H, N2, g);
    DiagKernelOptions o;
    o.disc = disc;
    o.chunk = 7;
    Tensor K = diag_ssm_kernel(Var(in.log_dt), Var(in.a_re), Var(in.A_imag), Var(in.B), Var(in.C), L, o).data();
    // explicit: Abar, Bbar from the definitions, then C Bbar Abar^l by repeated multiplication
    auto B = to_cplx(in.B), C = to_cplx(in.C);
    std::vector<cplx> Abar(H * N2), Ct(Cc * H * N2);
    for (int64_t h = 0; h < H; h++)
      for (int64_t n = 0; n < N2; n++) {
        const int64_t i = h * N2 + n;
        const double dt = std::exp(in.log_dt.data<double>()[h]);
        const cplx A(-std::exp(in.a_re.data<double>()[i]), in.A_imag.data<double>()[i]);
        cplx Bbar;
        if (disc == Discretization::zoh) Abar[i] = std::exp(dt * A), Bbar = (Abar[i] - 1.0) / A * B[i];
        else Abar[i] = (1.0 + dt * A / 2.0) / (1.0 - dt * A / 2.0), Bbar = dt / (1.0 - dt * A / 2.0) * B[i];
        for (int64_t c = 0; c < Cc; c++) Ct[c * H * N2 + i] = C[c * H * N2 + i] * Bbar;
      }
    std::vector<double> ref(Cc * H * L);
    vandermonde_powers(Ct.data(), Abar.data(), Cc, H, N2, L, 2.0, ref.data());
    EXPECT_TRUE(all_close(K, from_vector(ref, {Cc, H, L}), test::kAgreeF64, "vandermonde vs powers"));
  }
}

TEST(S4DKernel, ChunkedEqualsUnchunked) {
  Generator g(3);
  DiagInputs in = diag_inputs(1, 4, 8, g);
  auto run = [&](int64_t chunk) {
    DiagKernelOptions o;
    o.chunk = chunk;
    return diag_ssm_kernel(Var(in.log_dt), Var(in.a_re), Var(in.A_imag), Var(in.B), Var(in.C), 300, o).data();
  };
  Tensor whole = run(300);
  for (int64_t chunk : {1, 16, 64, 299})
    EXPECT_TRUE(all_close(run(chunk), whole, test::kAgreeF64, "chunk " + std::to_string(chunk)));
}

TEST(S4DKernel, FiniteDifferences) {
  for (auto disc : {Discretization::zoh, Discretization::bilinear})
    for (bool with_B : {true, false}) {
      test::OpCase c;
      c.name = "diag_ssm_kernel";
      const int64_t Cc = 2, H = 2, N2 = 3, L = 9;
      c.inputs = {test::uniform_input({H}, std::log(1e-2), std::log(0.5)), test::uniform_input({H, N2}, -1.5, 0.5),
                  test::uniform_input({H, N2}, 0.0, 6.0)};
      if (with_B) c.inputs.push_back(test::randn_input({H, N2, 2}));
      c.inputs.push_back(test::randn_input({Cc, H, N2, 2}));
      c.f = [=](const std::vector<Var>& v) {
        DiagKernelOptions o;
        o.disc = disc;
        o.chunk = 4;
        return diag_ssm_kernel(v[0], v[1], v[2], with_B ? v[3] : Var(), v.back(), L, o);
      };
      EXPECT_TRUE(test::gradcheck(c, false)) << (disc == Discretization::zoh ? "zoh" : "bilinear") << " B=" << with_B;
    }
}

TEST(S4DMinimal, ComposedKernelEqualsFused) {
  Generator g(4);
  S4DMinimal m(5, 8, g);
  test::to_f64(m);
  Tensor composed = m.kernel->forward(40).data();  // (H, L), from primitives
  DiagKernelOptions o;
  Var C4 = unsqueeze(m.kernel->C, 0);
  Tensor fused = diag_ssm_kernel(m.kernel->log_dt, m.kernel->log_A_real, m.kernel->A_imag, Var(), C4, 40, o).data();
  EXPECT_TRUE(all_close(composed, fused.select(0, 0), test::kAgreeF64, "minimal composed vs fused"));
}

TEST(S4D, ConvolutionModeEqualsRecurrentMode) {
  for (const char* init : {"lin", "inv", "legs", "real", "random"})
    for (auto disc : {Discretization::zoh, Discretization::bilinear}) {
      Generator g(5);
      S4DOptions o;
      o.kernel.d_state = 8;
      o.kernel.init = init;
      o.kernel.disc = disc;
      S4D layer(4, o, g);
      test::to_f64(layer);
      Tensor u = randn({2, 37, 4}, g, DType::f64);
      Tensor conv = layer.ssm(Var(u)).data(), rec = layer.ssm_recurrent(u);
      EXPECT_TRUE(all_close(conv, rec, test::kAgreeF64, std::string("init ") + init));
    }
}

TEST(S4D, LayerFiniteDifferencesOnParameters) {
  // S4D ssm part in float64: gradient w.r.t. log_dt, A (both parts), B, C, D and the input.
  for (bool bidir : {false, true}) {
    Generator g(6);
    S4DOptions o;
    o.kernel.d_state = 6;
    o.kernel.dt_min = 0.05, o.kernel.dt_max = 0.5;
    o.bidirectional = bidir;
    auto layer = std::make_shared<S4D>(3, o, g);
    test::to_f64(*layer);
    auto names = layer->named_parameters();
    test::OpCase c;
    c.name = "s4d_params";
    c.inputs.push_back(test::randn_input({2, 6, 3}));
    std::vector<std::string> used = {"kernel.log_dt", "kernel.inv_A_real", "kernel.A_imag", "kernel.B", "kernel.C", "D"};
    for (auto& n : used)
      for (auto& [pn, p] : names)
        if (pn == n) c.inputs.push_back(test::const_input(p.data().clone()));
    c.f = [layer, used, names](const std::vector<Var>& v) {
      auto k = layer->kernel;
      DiagKernelOptions ko;
      ko.chunk = 4;
      Var K = diag_ssm_kernel(v[1], v[2], v[3], v[4], v[5], v[0].size(1), ko);
      return ssm_conv(v[0], K, v[6]);
    };
    EXPECT_TRUE(test::gradcheck(c, false)) << "bidirectional=" << bidir;
  }
}

// ---- S4 DPLR ----
TEST(S4Kernel, CauchyEqualsNaiveDenseKernel) {
  for (int64_t N : {4, 8, 16}) {
    Generator g(7);
    S4KernelOptions o;
    o.d_state = N;
    o.channels = 2;
    o.dt_min = 0.01, o.dt_max = 0.3;
    S4Kernel k(3, o, g);
    test::to_f64(k);
    for (int64_t L : {16, 24, 64}) {  // 24 < 32: truncation of the length-32 kernel; 64: doubling
      Tensor K = k.forward(L).data().contiguous();
      Tensor naive = k.naive_kernel(L);
      double err = 0;
      for (int64_t i = 0; i < K.numel(); i++) err = std::max(err, std::abs(K.data<double>()[i] - naive.data<double>()[i]));
      EXPECT_TRUE(all_close(K, naive, {1e-8, 1e-9}, "N=" + std::to_string(N) + " L=" + std::to_string(L)))
          << "max abs err " << err;
      if (N == 16)
        std::printf("[ info ] S4 DPLR vs naive, N=%ld L=%ld l_kernel=%ld: max abs err %.3g\n", (long)N, (long)L,
                    (long)k.l_kernel(), err);
    }
  }
}

TEST(S4Kernel, FiniteDifferences) {
  test::OpCase c;
  c.name = "s4_dplr_kernel";
  const int64_t Cc = 2, H = 2, N2 = 3, Lk = 10;
  c.inputs = {test::uniform_input({H}, std::log(1e-2), std::log(0.5)),
              test::uniform_input({H, N2}, -1.5, 0.5),
              test::uniform_input({H, N2}, 0.0, 6.0),
              test::randn_input({H, N2, 2}),
              test::randn_input({1, H, N2, 2}, 0.5),
              test::randn_input({Cc, H, N2, 2})};
  c.f = [](const std::vector<Var>& v) { return s4_dplr_kernel(v[0], v[1], v[2], v[3], v[4], v[5], Lk); };
  EXPECT_TRUE(test::gradcheck(c, false));
  c.f = [](const std::vector<Var>& v) { return s4_dplr_kernel(v[0], v[1], v[2], v[3], v[4], v[5], 9); };  // odd length
  EXPECT_TRUE(test::gradcheck(c, false));
}

TEST(S4, ConvolutionModeEqualsRecurrentMode) {
  Generator g(8);
  S4Options o;
  o.kernel.d_state = 8;
  S4 layer(3, o, g);
  test::to_f64(layer);
  Tensor u = randn({2, 29, 3}, g, DType::f64);
  Tensor conv = layer.ssm(Var(u)).data(), rec = layer.ssm_recurrent(u);
  EXPECT_TRUE(all_close(conv, rec, {1e-8, 1e-9}, "S4 conv vs recurrence"));
}

TEST(S4, LinearTimeStepEqualsDenseStep) {
  // the O(N) Sherman-Morrison step against the dense Abar, after training-like moves of every SSM parameter
  Generator g(9);
  S4Options o;
  o.kernel.d_state = 16;
  S4 layer(3, o, g);
  test::to_f64(layer);
  layer.kernel->forward(40);
  for (Var* v : {&layer.kernel->log_dt, &layer.kernel->inv_A_real, &layer.kernel->A_imag, &layer.kernel->B, &layer.kernel->P})
    add_(v->mutable_data(), mul_scalar(randn(v->shape(), g, DType::f64), 0.1));
  Tensor u = randn({2, 41, 3}, g, DType::f64);
  Tensor fast = layer.ssm_recurrent(u), dense = layer.ssm_recurrent_dense(u);
  EXPECT_TRUE(all_close(fast, dense, {1e-10, 1e-11}, "S4 O(N) step vs dense step"));
  EXPECT_GT(amax(abs(fast), {0, 1, 2}).item(), 1e-3);  // not a trivially zero output
}

// ---- DLR ----
TEST(DLR, KernelFiniteDifferences) {
  test::OpCase c;
  c.name = "dlr_kernel";
  c.inputs = {test::uniform_input({4}, 0.1, 0.6), test::uniform_input({4}, 0.0, 6.0), test::randn_input({2, 3, 4, 2})};
  c.f = [](const std::vector<Var>& v) { return dlr_kernel(v[0], v[1], v[2], 11, 4); };
  EXPECT_TRUE(test::gradcheck(c, false));
}

TEST(DLR, ConvolutionModeEqualsRecurrentMode) {
  Generator g(9);
  DLROptions o;
  o.d_state = 16;
  DLR layer(3, o, g);
  test::to_f64(layer);
  Tensor u = randn({2, 25, 3}, g, DType::f64);
  EXPECT_TRUE(all_close(layer.ssm(Var(u)).data(), layer.ssm_recurrent(u), test::kAgreeF64, "DLR conv vs recurrence"));
}

TEST(SsmTiming, KernelAndConvAtLraScale) {
  // Not a benchmark: records the cost of one forward+backward at H=128, N=64, L=1024, B=4 in the log.
  Generator g(10);
  S4DOptions o;
  S4D layer(128, o, g);
  Tensor u = randn({4, 1024, 128}, g);
  auto t0 = std::chrono::steady_clock::now();
  Var x(u, true);
  Var y = layer.ssm(x);
  auto t1 = std::chrono::steady_clock::now();
  y.backward(ones(y.shape()));
  auto t2 = std::chrono::steady_clock::now();
  std::printf("[ info ] S4D ssm H=128 N=64 L=1024 B=4: forward %.1f ms, backward %.1f ms\n",
              std::chrono::duration<double, std::milli>(t1 - t0).count(),
              std::chrono::duration<double, std::milli>(t2 - t1).count());
  EXPECT_TRUE(x.grad().defined());
}
