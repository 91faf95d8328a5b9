// tests/nn/ssm/test_ema.cpp - the EMA layer (nn/ssm/ema.h): the convolution equals the recurrence it unrolls,
// finite differences of the whole layer, the kernel and convolution against PyTorch (tests/fixtures/nn_ema.py,
// MEGA's formula), and what the registry and backbones ask of it.
#include "nn/nn_test_util.h"
#include "nn/registry.h"
#include "nn/ssm/ema.h"
#include "nn/ssm/ssm_ops.h"

using namespace dl;
using namespace dl::nn;
using namespace dl::test;

// s_t = p beta u_t + q s_{t-1};  y_t = sum_n gamma s_t / sqrt(N) + D u_t, stepped in float64 from the parameters.
TEST(EMA, ConvolutionEqualsTheRecurrence) {
  Generator g(31);
  EMA layer(3, 4, /*bidirectional=*/false, 0.0, g);
  to_f64(layer);
  Tensor u = randn({2, 12, 3}, g, DType::f64);
  Tensor y = layer.ssm(Var(u)).data().contiguous();
  auto at = [](const Var& v, int64_t i) { return v.data().contiguous().data<double>()[i]; };
  const int64_t H = 3, N = 4;
  for (int64_t b = 0; b < 2; b++)
    for (int64_t h = 0; h < H; h++) {
      std::vector<double> s(N, 0.0);
      for (int64_t t = 0; t < 12; t++) {
        const double x = u.at({b, t, h});
        double out = at(layer.D, h) * x;
        for (int64_t n = 0; n < N; n++) {
          const double p = 1 / (1 + std::exp(-at(layer.kernel->delta, h * N + n)));
          const double q = 1 - p / (1 + std::exp(-at(layer.kernel->alpha, h * N + n)));
          s[n] = p * at(layer.kernel->beta, h * N + n) * x + q * s[n];
          out += at(layer.kernel->gamma, h * N + n) * s[n] / std::sqrt((double)N);
        }
        EXPECT_NEAR(y.at({b, t, h}), out, 1e-10) << "b " << b << " t " << t << " h " << h;
      }
    }
}

TEST(EMA, LayerFiniteDifferences) {
  for (bool bidir : {false, true}) {
    Generator g(32);
    EMA layer(3, 2, bidir, 0.0, g);
    to_f64(layer);
    Var x = randn_var({2, 5, 3}, 33);
    Tensor mask = ones({2, 5}, DType::f64);
    mask.narrow(0, 1, 1).narrow(1, 3, 2).zero_();
    EXPECT_TRUE(module_gradcheck(layer, {x}, [&] { return layer.forward(x, mask); })) << "bidirectional " << bidir;
  }
}

// Kernel (bidirectional: two gamma channels) and convolution against MEGA's formula in PyTorch.
TEST(EMA, AgainstPyTorch) {
  TensorFile f = zoo_fixture("ema_bidir");
  Generator g(0);
  EMA layer(3, 4, /*bidirectional=*/true, 0.0, g);
  std::map<std::string, Tensor> sd;
  for (auto& [k, t] : f.tensors)
    if (k.rfind("param.", 0) == 0) sd[k.substr(6)] = t;
  LoadOptions lo;
  lo.allow_missing = {"output_linear."};  // the convolution only: y = K * u + D u
  LoadReport rep = layer.load_state_dict(sd, lo);
  EXPECT_EQ(rep.loaded.size(), 5u) << rep.str();
  std::map<std::string, Var> p;
  for (auto& [k, v] : layer.named_parameters())
    if (sd.count(k)) p[k] = v;
  ASSERT_EQ(p.size(), 5u);
  Var u(f.at("input").clone(), true);
  zoo_check(f, layer.ssm(u), u, p, kFixtureLong);
}

TEST(EMA, WhatBackbonesAsk) {
  Generator g(34);
  auto causal = make_layer("ema", 4, LayerConfig{{"d_state", 2}}, g);
  auto both = make_layer("ema", 4, LayerConfig{{"d_state", 2}, {"bidirectional", true}}, g);
  EXPECT_TRUE(causal->is_causal());
  EXPECT_FALSE(both->is_causal());
  EXPECT_FALSE(causal->wants_feed_forward());        // the shell's GLU projection ends the layer
  EXPECT_TRUE(causal->own_lr_parameters().empty());  // MEGA trains them at the base lr
  EXPECT_EQ(both->learned_kernel(9).shape(), (Shape{2, 4, 9}));
  Tensor k = causal->learned_kernel(9), direct = static_cast<EMA&>(*causal).kernel->forward(9).data();
  EXPECT_TRUE(all_close(k, direct, Tol{0.0, 0.0}, "learned_kernel is the kernel (the same computation)"));
  EXPECT_EQ(static_cast<EMA&>(*make_layer("ema", 4, LayerConfig::object(), g)).kernel->N, 16);  // MEGA-sized default
  nn::BackboneOptions bo;
  bo.dropout = 0.1, bo.causal = true, bo.d_state = 8, bo.heads = 4;
  EXPECT_EQ(backbone_config(find_layer("ema"), bo), (LayerConfig{{"dropout", 0.1}, {"bidirectional", false}, {"d_state", 8}}));
  for (auto& [cfg, field] : std::vector<std::pair<LayerConfig, std::string>>{
           {{{"d_state", 0}}, "d_state"}, {{{"dropout", 1.0}}, "dropout"}, {{{"heads", 2}}, "heads"}}) {
    try {
      make_layer("ema", 4, cfg, g);
      ADD_FAILURE() << cfg.dump() << " was accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("layer ema"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("'" + field + "'"), std::string::npos) << e.what();
    }
  }
}
