// tests/zoo/test_zoo_layers.cpp - LSTM fused == composed cell, finite differences of the cells and the
// convolutions, causality, registry construction and the error messages of the zoo.
#include <gtest/gtest.h>

#include "nn/conv_seq.h"
#include "nn/dlr.h"
#include "nn/lstm.h"
#include "nn/s4.h"
#include "nn/s4d.h"
#include "nn/s4d_minimal.h"
#include "nn/ssm_block.h"
#include "op_harness.h"

using namespace dl;
using namespace dl::nn;
using dl::test::all_close;

TEST(LSTMCell, FusedEqualsComposedValuesAndGradients) {
  Generator g(11);
  Tensor gates = randn({3, 4 * 5}, g), c = randn({3, 5}, g), gout = randn({3, 2, 5}, g);
  Var g1(gates.clone(), true), c1(c.clone(), true), g2(gates.clone(), true), c2(c.clone(), true);
  Var y1 = lstm_cell_fused(g1, c1), y2 = lstm_cell_composed(g2, c2);
  EXPECT_TRUE(all_close(y1.data(), y2.data(), test::kAgreeF32, "h, c"));
  y1.backward(gout);
  y2.backward(gout);
  EXPECT_TRUE(all_close(g1.grad(), g2.grad(), test::kAgreeF32, "d gates"));
  EXPECT_TRUE(all_close(c1.grad(), c2.grad(), test::kAgreeF32, "d c"));
}

TEST(LSTMCell, FiniteDifferences) {
  for (bool fused : {true, false}) {
    test::OpCase c;
    c.name = fused ? "lstm_cell_fused" : "lstm_cell_composed";
    c.inputs = {test::randn_input({2, 12}), test::randn_input({2, 3})};
    c.f = [fused](const std::vector<Var>& v) { return fused ? lstm_cell_fused(v[0], v[1]) : lstm_cell_composed(v[0], v[1]); };
    EXPECT_TRUE(test::gradcheck(c, false)) << c.name;
  }
}

TEST(LSTM, FusedAndComposedLayersAgree) {
  Generator g(12);
  LSTMOptions o;
  o.num_layers = 2;
  LSTM a(4, 6, o, g);
  o.fused = false;
  Generator g2(12);
  LSTM b(4, 6, o, g2);
  Tensor x = randn({2, 9, 4}, g);
  Var xa(x.clone(), true), xb(x.clone(), true);
  Var ya = a.forward(xa, Tensor()), yb = b.forward(xb, Tensor());
  EXPECT_TRUE(all_close(ya.data(), yb.data(), test::kAgreeF32, "output"));
  Tensor gout = randn(ya.shape(), g);
  ya.backward(gout);
  yb.backward(gout);
  EXPECT_TRUE(all_close(xa.grad(), xb.grad(), test::kAgreeF32, "dx"));
  auto pa = a.named_parameters(), pb = b.named_parameters();
  for (size_t i = 0; i < pa.size(); i++) EXPECT_TRUE(all_close(pa[i].second.grad(), pb[i].second.grad(), test::kAgreeF32, pa[i].first));
}

TEST(LSTM, LayerNormVariantFiniteDifferences) {
  Generator g(13);
  LSTMOptions o;
  o.layer_norm = true;
  auto m = std::make_shared<LSTM>(3, 4, o, g);
  to_double(*m);
  test::OpCase c;
  c.name = "ln_lstm";
  c.inputs = {test::randn_input({2, 4, 3})};
  c.f = [m](const std::vector<Var>& v) { return m->forward(v[0], Tensor()); };
  EXPECT_TRUE(test::gradcheck(c, false));
  auto names = m->named_parameters();
  bool has_ln = false;
  for (auto& [n, p] : names) has_ln |= n == "ln_c_l0.weight";
  EXPECT_TRUE(has_ln);
}

TEST(ConvSeq, FiniteDifferencesOfEachBlock) {
  for (std::string kind : {"lightconv", "dynamicconv", "dilatedconv"})
    for (bool causal : {false, true}) {
      Generator g(14);
      ConvSeqOptions o;
      o.kernel_size = 3;
      o.num_heads = 2;
      o.dilation = 2;
      o.causal = causal;
      auto m = std::make_shared<GLUConvBlock>(kind, 4, o, g);
      to_double(*m);
      test::OpCase c;
      c.name = kind;
      c.inputs = {test::randn_input({2, 6, 4})};
      c.f = [m](const std::vector<Var>& v) { return m->forward(v[0], Tensor()); };
      EXPECT_TRUE(test::gradcheck(c, false)) << kind << " causal=" << causal;
    }
}

// A causal layer's output at t must not change when inputs after t change.
TEST(Zoo, CausalLayersDoNotLookAhead) {
  for (std::string name : {"s4", "s4d", "s4d_minimal", "dlr", "lstm", "lightconv", "dynamicconv", "dilatedconv"}) {
    Generator g(15);
    LayerConfig cfg = LayerConfig::object();
    if (name == "s4" || name == "s4d" || name == "s4d_minimal" || name == "dlr") cfg["d_state"] = 8;
    if (name == "lightconv" || name == "dynamicconv" || name == "dilatedconv") cfg["causal"] = true;
    auto layer = make_layer(name, 4, cfg, g);
    ASSERT_TRUE(layer->is_causal()) << name;
    Tensor x = randn({1, 10, 4}, g), x2 = x.clone();
    x2.narrow(1, 6, 4).copy_(randn({1, 4, 4}, g));
    NoGradGuard ng;
    Tensor y = layer->forward(Var(x), Tensor()).data(), y2 = layer->forward(Var(x2), Tensor()).data();
    EXPECT_TRUE(all_close(y.narrow(1, 0, 6), y2.narrow(1, 0, 6), {1e-5, 1e-5}, name + " prefix"));
  }
}

TEST(Zoo, PaddingDoesNotLeakIntoRealPositions) {
  for (std::string name : {"s4", "s4d", "dlr", "lightconv", "dynamicconv", "dilatedconv"}) {
    Generator g(16);
    LayerConfig cfg = LayerConfig::object();
    if (name == "s4" || name == "s4d" || name == "dlr") cfg["d_state"] = 8, cfg["bidirectional"] = true;
    auto layer = make_layer(name, 4, cfg, g);
    Tensor x = randn({1, 8, 4}, g), x2 = x.clone();
    x2.narrow(1, 5, 3).copy_(randn({1, 3, 4}, g));  // change only the padding
    Tensor mask = ones({1, 8});
    mask.narrow(1, 5, 3).fill_(0.0);
    NoGradGuard ng;
    Tensor y = layer->forward(Var(x), mask).data(), y2 = layer->forward(Var(x2), mask).data();
    EXPECT_TRUE(all_close(y.narrow(1, 0, 5), y2.narrow(1, 0, 5), {1e-5, 1e-5}, name + " real positions"));
  }
}

TEST(Zoo, RegistryBuildsEveryLayerWithDefaults) {
  for (std::string name : {"s4", "s4d", "s4d_minimal", "dlr", "lstm", "lightconv", "dynamicconv", "dilatedconv"}) {
    Generator g(17);
    auto layer = make_layer(name, 8, LayerConfig::object(), g);
    Tensor x = randn({2, 16, 8}, g);
    Var y = layer->forward(Var(x), Tensor());
    EXPECT_EQ(y.shape(), (Shape{2, 16, 8})) << name;
  }
}

static std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(Zoo, BadConfigNamesLayerAndField) {
  Generator g(18);
  struct Case {
    std::string layer, field;
    LayerConfig cfg;
  };
  std::vector<Case> cases = {
      {"s4d", "d_state", {{"d_state", 7}}},       {"s4d", "init", {{"init", "hippo"}}},
      {"s4d", "disc", {{"disc", "euler"}}},       {"s4", "dropout", {{"dropout", 1.5}}},
      {"dlr", "d_state", {{"d_state", "big"}}},   {"lstm", "num_layers", {{"num_layers", 0}}},
      {"lightconv", "kernel_size", {{"kernel_size", 4}}}, {"dynamicconv", "num_heads", {{"num_heads", 3}}},
      {"dilatedconv", "dilation", {{"dilation", 0}}},     {"s4d_minimal", "colour", {{"colour", 1}}},
  };
  for (auto& c : cases) {
    std::string msg = error_of([&] { make_layer(c.layer, 8, c.cfg, g); });
    EXPECT_NE(msg.find("layer " + c.layer), std::string::npos) << msg;
    EXPECT_NE(msg.find("'" + c.field + "'"), std::string::npos) << msg;
  }
}

TEST(Zoo, WrongChannelCountNamesExpectedAndFound) {
  for (std::string name : {"s4", "s4d", "s4d_minimal", "dlr", "lstm", "lightconv", "dynamicconv", "dilatedconv"}) {
    Generator g(19);
    auto layer = make_layer(name, 8, LayerConfig::object(), g);
    std::string msg = error_of([&] { layer->forward(Var(zeros({2, 5, 6})), Tensor()); });
    EXPECT_NE(msg.find("6 channels, expected 8"), std::string::npos) << name << ": " << msg;
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
  }
}

TEST(Zoo, SsmGroupNamesAreParameters) {
  Generator g(20);
  S4D s4d(4, S4DOptions{}, g);
  S4 s4(4, S4Options{}, g);
  auto check = [](Module& m, const std::vector<std::string>& names) {
    auto params = m.named_parameters();
    for (auto& n : names) {
      bool found = false;
      for (auto& [pn, p] : params) found |= pn == n;
      EXPECT_TRUE(found) << n;
    }
  };
  check(s4d, s4d.ssm_parameter_names());
  check(s4, s4.ssm_parameter_names());
  EXPECT_EQ(s4d.ssm_parameter_names(), (std::vector<std::string>{"kernel.log_dt", "kernel.inv_A_real", "kernel.A_imag", "kernel.B"}));
}

TEST(SSMBlock, PreAndPostNormWithLayerAndBatchNorm) {
  for (std::string norm : {"layer", "batch"})
    for (bool pre : {true, false}) {
      Generator g(21);
      auto core = make_layer("s4d", 4, LayerConfig{{"d_state", 8}}, g);
      SSMBlock block(core, 4, norm, pre, 0.0, g);
      Var x(randn({2, 10, 4}, g), true);
      Var y = block.forward(x, Tensor());
      EXPECT_EQ(y.shape(), (Shape{2, 10, 4}));
      y.backward(ones(y.shape()));
      EXPECT_TRUE(x.grad().defined());
      bool named = false;
      for (auto& [n, p] : block.named_parameters()) named |= n == "layer.kernel.log_dt";
      EXPECT_TRUE(named) << norm;
    }
}
