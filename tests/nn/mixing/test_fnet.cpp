// tests/nn/mixing/test_fnet.cpp - FNet token mixing (nn/mixing/fnet.h): forward and input gradient vs PyTorch's
// torch.fft.fft2(x).real (tests/fixtures/nn_fnet.py), the DFT-matmul form vs the plain double sum of cosines,
// finite differences, padding that must not leak, construction through the registry, and error messages.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/mixing/fnet.h"
#include "nn/registry.h"
#include "op_harness.h"

using dl::test::error_of;
using namespace dl;
using namespace dl::nn;
using dl::test::all_close;

static TensorFile fnet_fixture(const std::string& name) {
  return load_safetensors(test::fixture_path("nn_fnet/" + name + ".safetensors"));
}

// Recorded PyTorch values. PyTorch sums by FFT, we by DFT matmuls; at L*H <= 40 terms the ordinary float32
// fixture tolerance holds (use kFixtureLong for fixtures with L*H in the hundreds).
TEST(FNet, MatchesPyTorch) {
  for (std::string name : {"fnet_nomask", "fnet_mask"}) {
    TensorFile f = fnet_fixture(name);
    Var x(f.at("input").clone(), true);
    Tensor mask = f.has("extra.mask") ? f.at("extra.mask") : Tensor();
    FNet layer(x.size(2));
    Var y = layer.forward(x, mask);
    EXPECT_TRUE(all_close(y.data(), f.at("output"), test::kFixture, name + " output"));
    y.backward(f.at("gout"));
    EXPECT_TRUE(all_close(x.grad(), f.at("grad.input"), test::kFixture, name + " grad.input"));
  }
}

// The slow, obvious path: Re(FFT2(x))[l, h] = sum_{j,k} x[j, k] cos(2 pi (l j / L + h k / H)), in float64.
TEST(FNet, EqualsDoubleSumOfCosines) {
  Generator g(31);
  const int64_t B = 2, L = 5, H = 6;
  Tensor x = randn({B, L, H}, g, DType::f64).contiguous();
  FNet layer(H);
  Tensor y = layer.forward(Var(x), Tensor()).data();
  Tensor ref = zeros({B, L, H}, DType::f64);
  const double* px = x.data<double>();
  double* pr = ref.data<double>();
  for (int64_t b = 0; b < B; b++)
    for (int64_t l = 0; l < L; l++)
      for (int64_t h = 0; h < H; h++)
        for (int64_t j = 0; j < L; j++)
          for (int64_t k = 0; k < H; k++)
            pr[(b * L + l) * H + h] += px[(b * L + j) * H + k] * std::cos(2 * M_PI * ((double)l * j / L + (double)h * k / H));
  EXPECT_TRUE(all_close(y, ref, test::kAgreeF64, "DFT matmuls vs double sum"));
}

TEST(FNet, FiniteDifferences) {
  Tensor mask = ones({2, 5}, DType::f64);
  mask.narrow(1, 3, 2).fill_(0.0);
  for (bool masked : {false, true}) {
    auto layer = std::make_shared<FNet>(4);
    test::OpCase c;
    c.name = masked ? "fnet_masked" : "fnet";
    c.inputs = {test::randn_input({2, 5, 4})};
    c.f = [layer, masked, mask](const std::vector<Var>& v) { return layer->forward(v[0], masked ? mask : Tensor()); };
    EXPECT_TRUE(test::gradcheck(c, false)) << c.name;
    EXPECT_TRUE(test::gradcheck(c, true)) << c.name << " (non-contiguous input)";
  }
}

// Changing only padded positions must leave the real positions' outputs unchanged, and no gradient may flow
// into padded inputs.
TEST(FNet, PaddingDoesNotLeakIntoRealPositions) {
  Generator g(32);
  FNet layer(4);
  Tensor x = randn({2, 8, 4}, g), x2 = x.clone();
  x2.narrow(1, 5, 3).copy_(randn({2, 3, 4}, g));  // change only the padding
  Tensor mask = ones({2, 8});
  mask.narrow(1, 5, 3).fill_(0.0);
  Var xv(x, true);
  Var y = layer.forward(xv, mask);
  Tensor y2 = layer.forward(Var(x2), mask).data();
  EXPECT_TRUE(all_close(y.data().narrow(1, 0, 5), y2.narrow(1, 0, 5), {1e-6, 1e-6}, "real positions"));
  y.backward(ones(y.shape()));
  EXPECT_TRUE(all_close(xv.grad().narrow(1, 5, 3), zeros({2, 3, 4}), {0, 0}, "grad into padding"));
}

TEST(FNet, BuiltThroughTheRegistry) {
  Generator g(33);
  auto layer = make_layer("fnet", 8, LayerConfig::object(), g);
  EXPECT_EQ(layer->type_name(), "FNet");
  EXPECT_FALSE(layer->is_causal());
  EXPECT_EQ(layer->num_parameters(), 0);
  EXPECT_TRUE(layer->state_dict().empty());  // nothing to checkpoint, as HuggingFace's FNet mixing
  Tensor x = randn({2, 16, 8}, g);
  Var y = layer->forward(Var(x), Tensor());
  EXPECT_EQ(y.shape(), (Shape{2, 16, 8}));
  // the same layer again for another length: the DFT cache is per length
  EXPECT_EQ(layer->forward(Var(randn({1, 3, 8}, g)), Tensor()).shape(), (Shape{1, 3, 8}));
  bool listed = false;
  for (auto& e : layer_registry()) listed |= e.name == "fnet";
  EXPECT_TRUE(listed);
}

TEST(FNet, ErrorsNameLayerExpectedAndFound) {
  Generator g(34);
  auto layer = make_layer("fnet", 6, LayerConfig::object(), g);
  std::string e = error_of([&] { layer->forward(Var(randn({2, 7, 5}, g)), Tensor()); });
  EXPECT_NE(e.find("fnet"), std::string::npos) << e;
  EXPECT_NE(e.find("expected 6"), std::string::npos) << e;
  EXPECT_NE(e.find("has 5 channels"), std::string::npos) << e;
  e = error_of([&] { layer->forward(Var(randn({7, 6}, g)), Tensor()); });
  EXPECT_NE(e.find("fnet"), std::string::npos) << e;
  EXPECT_NE(e.find("[7, 6]"), std::string::npos) << e;
  e = error_of([&] { layer->forward(Var(randn({2, 7, 6}, g)), ones({2, 6})); });
  EXPECT_NE(e.find("fnet"), std::string::npos) << e;
  EXPECT_NE(e.find("(2, 7)"), std::string::npos) << e;
  EXPECT_NE(e.find("[2, 6]"), std::string::npos) << e;
  LayerConfig bad = {{"d_state", 8}};
  e = error_of([&] { make_layer("fnet", 6, bad, g); });
  EXPECT_NE(e.find("layer fnet: unknown config field 'd_state'"), std::string::npos) << e;
}
