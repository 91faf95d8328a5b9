// tests/nn/attention/test_attention_registry.cpp - the attention family's registry entries: each builds from a config,
// maps (B, L, H) to (B, L, H), and keeps padding from leaking into real positions (non-causal layers).
#include "nn/registry.h"
#include "nn/nn_test_util.h"

using namespace dl;
using namespace dl::test;
using namespace dl::nn;

TEST(AttentionRegistry, BuildsAndMasks) {
  const std::vector<std::pair<std::string, LayerConfig>> entries = {
      {"attention", {{"heads", 2}}},
      {"attention", {{"heads", 2}, {"rotary", true}, {"fused", true}}},
      {"attention", {{"heads", 2}, {"window", 3}}},
      {"linear_attention", {{"heads", 2}, {"feature", "relu"}}},
      {"performer", {{"heads", 2}, {"features", 16}}},
      {"mixer", {{"max_len", 10}}},
  };
  for (auto& [name, cfg] : entries) {
    Generator g(1);
    auto layer = make_layer(name, 8, cfg, g);
    layer->eval();
    Tensor x = randn({2, 10, 8}, g);
    Tensor mask = ones({2, 10});
    mask.narrow(0, 1, 1).narrow(1, 7, 3).zero_();
    NoGradGuard ng;
    Tensor y1 = layer->forward(Var(x), mask).data();
    EXPECT_EQ(y1.shape(), (Shape{2, 10, 8})) << name;
    x.narrow(0, 1, 1).narrow(1, 7, 3).fill_(50.0);  // change only the padding
    Tensor y2 = layer->forward(Var(x), mask).data();
    EXPECT_TRUE(all_close(y2.narrow(1, 0, 7), y1.narrow(1, 0, 7), kAgreeF32, name + " " + cfg.dump() + ": padding leaked"));
  }
}

TEST(AttentionRegistry, CausalFlagAndConfigErrors) {
  Generator g(2);
  EXPECT_TRUE(make_layer("attention", 8, {{"heads", 2}, {"causal", true}}, g)->is_causal());
  EXPECT_TRUE(make_layer("linear_attention", 8, {{"heads", 2}, {"causal", true}}, g)->is_causal());
  EXPECT_FALSE(make_layer("performer", 8, {{"heads", 2}}, g)->is_causal());
  EXPECT_THROW(make_layer("mixer", 8, LayerConfig::object(), g), ShapeError);             // max_len is required
  EXPECT_THROW(make_layer("attention", 8, {{"heads", "two"}}, g), ShapeError);            // wrong type
  EXPECT_THROW(make_layer("linear_attention", 8, {{"feature", "tanh"}}, g), ShapeError);  // unknown feature
}
