// tests/zoo/test_zoo_fixtures.cpp - forward and every gradient of S4D, the S4 DPLR kernel, DLR, LSTM and the
// lightweight / dynamic convolution blocks against values recorded from PyTorch (tests/fixtures/nn_zoo_*.py,
// files in tests/fixtures/zoo/). Each file: param.<name>, input, output, gout, grad.<name>, grad_input.
#include <gtest/gtest.h>

#include "nn/conv_seq.h"
#include "nn/lstm.h"
#include "nn/s4.h"
#include "nn/ssm_ops.h"
#include "op_harness.h"

using namespace dl;
using namespace dl::nn;
using dl::test::all_close;

namespace {

TensorFile load(const std::string& name) { return load_safetensors(test::fixture_path("zoo/" + name + ".safetensors")); }

// Leaves for every param.<name> in the file.
std::map<std::string, Var> param_leaves(const TensorFile& f) {
  std::map<std::string, Var> out;
  for (auto& [k, t] : f.tensors)
    if (k.rfind("param.", 0) == 0) out[k.substr(6)] = Var(t.clone(), true);
  return out;
}

// Backward with gout and compare output, input gradient and every parameter gradient.
void check(const TensorFile& f, const Var& out, const Var& input, const std::map<std::string, Var>& params, test::Tol tol) {
  EXPECT_TRUE(all_close(out.data(), f.at("output"), tol, "output"));
  out.backward(f.at("gout"));
  if (input.defined()) {
    EXPECT_TRUE(all_close(input.grad(), f.at("grad_input"), tol, "grad_input"));
  }
  for (auto& [k, v] : params) EXPECT_TRUE(all_close(v.grad(), f.at("grad." + k), tol, "grad." + k));
}

// Loads the file's parameters into module m (strict: names and shapes must match torch's state_dict).
std::map<std::string, Var> load_into(Module& m, const TensorFile& f) {
  std::map<std::string, Tensor> sd;
  for (auto& [k, t] : f.tensors)
    if (k.rfind("param.", 0) == 0) sd[k.substr(6)] = t;
  LoadReport r = m.load_state_dict(sd);
  EXPECT_TRUE(r.ok()) << r.str();
  std::map<std::string, Var> ps;
  for (auto& [k, v] : m.named_parameters()) ps[k] = v;
  return ps;
}

}  // namespace

// FFTs and length-L kernels: rounding grows with L (kFixtureLong), and the fixture computed in float64.
TEST(ZooFixtures, S4D) {
  for (std::string name : {"s4d_zoh", "s4d_bilinear_bidir"}) {
    SCOPED_TRACE(name);
    TensorFile f = load(name);
    auto p = param_leaves(f);
    Var u(f.at("input").clone(), true);
    DiagKernelOptions o;
    o.disc = name == "s4d_zoh" ? Discretization::zoh : Discretization::bilinear;
    o.chunk = 5;
    Var K = diag_ssm_kernel(p["log_dt"], p["inv_A_real"], p["A_imag"], p["B"], p["C"], u.size(1), o);
    check(f, ssm_conv(u, K, p["D"]), u, p, test::kFixtureLong);
  }
}

TEST(ZooFixtures, S4DplrKernel) {
  TensorFile f = load("s4_dplr_kernel");
  auto p = param_leaves(f);
  Var K = s4_dplr_kernel(p["log_dt"], p["inv_A_real"], p["A_imag"], p["B"], p["P"], p["C"], f.at("output").size(2));
  check(f, K, Var(), p, test::kFixtureLong);
}

TEST(ZooFixtures, DLR) {
  TensorFile f = load("dlr_bidir");
  auto p = param_leaves(f);
  Var u(f.at("input").clone(), true);
  Var K = dlr_kernel(p["Lambda_log_neg_re"], p["Lambda_im"], p["W"], u.size(1), 4);
  check(f, ssm_conv(u, K, p["D"]), u, p, test::kFixtureLong);
}

TEST(ZooFixtures, LSTMTwoLayers) {
  for (bool fused : {true, false}) {
    TensorFile f = load("lstm_2layer");
    Generator g(0);
    LSTMOptions o;
    o.num_layers = 2;
    o.fused = fused;
    LSTM m(4, 5, o, g);
    auto p = load_into(m, f);
    Var x(f.at("input").clone(), true);
    check(f, m.forward(x, Tensor()), x, p, test::kFixture);
  }
}

TEST(ZooFixtures, LightweightAndDynamicConvBlocks) {
  struct Case {
    std::string file, kind;
    int64_t K, H;
    bool causal;
  };
  for (auto c : {Case{"lightconv", "lightconv", 5, 2, false}, Case{"dynamicconv_causal", "dynamicconv", 3, 3, true}}) {
    SCOPED_TRACE(c.file);
    TensorFile f = load(c.file);
    Generator g(0);
    ConvSeqOptions o;
    o.kernel_size = c.K, o.num_heads = c.H, o.causal = c.causal;
    GLUConvBlock m(c.kind, 6, o, g);
    auto p = load_into(m, f);
    Var x(f.at("input").clone(), true);
    check(f, m.forward(x, Tensor()), x, p, test::kFixture);
  }
}
