// tests/nn/recurrent/test_lstm.cpp - the LSTM: fused cell == composed cell, fused and composed layers agree, finite differences, and a
// two-layer LSTM against values recorded from PyTorch (tests/fixtures/nn_zoo_rnn_conv.py).
#include <gtest/gtest.h>

#include "nn/nn_test_util.h"
#include "nn/recurrent/lstm.h"

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
  for (size_t i = 0; i < pa.size(); i++)
    EXPECT_TRUE(all_close(pa[i].second.grad(), pb[i].second.grad(), test::kAgreeF32, pa[i].first));
}

TEST(LSTM, LayerNormVariantFiniteDifferences) {
  Generator g(13);
  LSTMOptions o;
  o.layer_norm = true;
  auto m = std::make_shared<LSTM>(3, 4, o, g);
  test::to_f64(*m);
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

TEST(LSTM, TwoLayersAgainstPyTorch) {
  for (bool fused : {true, false}) {
    TensorFile f = test::zoo_fixture("lstm_2layer");
    Generator g(0);
    LSTMOptions o;
    o.num_layers = 2;
    o.fused = fused;
    LSTM m(4, 5, o, g);
    auto p = test::zoo_load_into(m, f);
    Var x(f.at("input").clone(), true);
    test::zoo_check(f, m.forward(x, Tensor()), x, p, test::kFixture);
  }
}
