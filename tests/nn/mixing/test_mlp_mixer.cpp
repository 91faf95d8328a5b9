// tests/nn/mixing/test_mlp_mixer.cpp - the MLP-Mixer block: forward and every gradient against PyTorch
// (tests/fixtures/nn_models.py, "mixer_block"), padding, finite differences, and its registry entry.
#include "nn/mixing/mlp_mixer.h"
#include "nn/nn_test_util.h"
#include "nn/registry.h"

using namespace dl;
using namespace dl::test;
using namespace dl::nn;

TEST(MixerBlock, AgainstPyTorch) {
  Generator g(0);
  MixerBlock mb(5, 8, 12, 16, g);
  TensorFile f = nn_fixture("mixer_block");
  load_fixture_state(mb, f);
  Var x = fixture_input(f);
  EXPECT_TRUE(check_fixture(mb, f, mb.forward(x, Tensor()), {{"input", x}}));
}

TEST(MixerBlock, PaddingDoesNotLeak) {
  Generator g(3);
  MixerBlock mb(6, 4, 5, 8, g);
  Tensor x = randn({1, 6, 4}, g);
  Tensor mask = ones({1, 6});
  mask.narrow(1, 4, 2).zero_();
  NoGradGuard ng;
  Tensor y1 = mb.forward(Var(x), mask).data().narrow(1, 0, 4).clone();
  x.narrow(1, 4, 2).fill_(100.0);
  Tensor y2 = mb.forward(Var(x), mask).data().narrow(1, 0, 4);
  EXPECT_TRUE(all_close(y1, y2, kAgreeF32, "real positions unaffected by padding"));
  // a shorter input is padded to seq_len internally
  EXPECT_EQ(mb.forward(Var(randn({2, 3, 4}, g)), Tensor()).shape(), (Shape{2, 3, 4}));
}

TEST(MixerBlock, FiniteDifferences) {
  Var x = randn_var({2, 3, 4}, 21);
  Tensor mask = ones({2, 3});
  mask.narrow(0, 1, 1).narrow(1, 2, 1).zero_();
  Generator g(4);
  MixerBlock mb(3, 4, 5, 6, g);
  to_f64(mb);
  EXPECT_TRUE(module_gradcheck(mb, {x}, [&] { return mb.forward(x, mask); }));
}

// Through the registry it needs max_len, rejects unknown fields, and carries its own channel MLP.
TEST(MixerBlock, RegistryEntry) {
  Generator g(5);
  auto layer = make_layer("mixer", 4, LayerConfig{{"max_len", 6}}, g);
  EXPECT_FALSE(layer->wants_feed_forward());
  EXPECT_EQ(layer->forward(Var(randn({2, 6, 4}, g)), Tensor()).shape(), (Shape{2, 6, 4}));
  EXPECT_THROW(make_layer("mixer", 4, LayerConfig::object(), g), std::exception);
  try {
    make_layer("mixer", 4, LayerConfig{{"max_len", 6}, {"tokens", 3}}, g);
    FAIL() << "an unknown field was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("unknown config field 'tokens'"), std::string::npos) << e.what();
  }
}
