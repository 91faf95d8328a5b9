// tests/nn/test_residual_block.cpp - the residual block around a sequence layer.
#include <gtest/gtest.h>

#include "nn/registry.h"
#include "nn/residual_block.h"
#include "op_harness.h"

using namespace dl;
using namespace dl::nn;
using dl::test::all_close;

TEST(ResidualBlock, PreAndPostNormWithLayerAndBatchNorm) {
  for (std::string norm : {"layer", "batch"})
    for (bool pre : {true, false}) {
      Generator g(21);
      auto core = make_layer("s4d", 4, LayerConfig{{"d_state", 8}}, g);
      ResidualBlockOptions o;
      o.norm = norm, o.prenorm = pre;
      ResidualBlock block(core, 4, o, g);
      Var x(randn({2, 10, 4}, g), true);
      Var y = block.forward(x, Tensor());
      EXPECT_EQ(y.shape(), (Shape{2, 10, 4}));
      y.backward(ones(y.shape()));
      EXPECT_TRUE(x.grad().defined());
      bool named = false;
      for (auto& [n, p] : block.named_parameters()) named |= n == "mixer.kernel.log_dt";
      EXPECT_TRUE(named) << norm;
    }
}
