// tests/nn/conv/test_conv_seq.cpp - the convolution blocks (lightweight, dynamic, dilated): finite differences of each, causal
// and not, and the lightweight / dynamic / dilated blocks against values recorded from PyTorch (tests/fixtures/nn_zoo_rnn_conv.py).
#include <gtest/gtest.h>

#include "nn/conv/conv_seq.h"
#include "nn/nn_test_util.h"

using namespace dl;
using namespace dl::nn;
using dl::test::all_close;

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
      test::to_f64(*m);
      test::OpCase c;
      c.name = kind;
      c.inputs = {test::randn_input({2, 6, 4})};
      c.f = [m](const std::vector<Var>& v) { return m->forward(v[0], Tensor()); };
      EXPECT_TRUE(test::gradcheck(c, false)) << kind << " causal=" << causal;
    }
}

TEST(ConvSeq, LightweightAndDynamicBlocksAgainstPyTorch) {
  struct Case {
    std::string file, kind;
    int64_t K, H;
    bool causal;
  };
  for (auto c : {Case{"lightconv", "lightconv", 5, 2, false}, Case{"dynamicconv_causal", "dynamicconv", 3, 3, true}}) {
    SCOPED_TRACE(c.file);
    TensorFile f = test::zoo_fixture(c.file);
    Generator g(0);
    ConvSeqOptions o;
    o.kernel_size = c.K, o.num_heads = c.H, o.causal = c.causal;
    GLUConvBlock m(c.kind, 6, o, g);
    auto p = test::zoo_load_into(m, f);
    Var x(f.at("input").clone(), true);
    test::zoo_check(f, m.forward(x, Tensor()), x, p, test::kFixture);
  }
}

TEST(ConvSeq, DilatedBlockAgainstPyTorch) {
  // torch.nn.Conv1d(C, C, 3, groups=C, dilation=2) then Linear(C, C), inside the GLU block, centred padding
  TensorFile f = test::zoo_fixture("dilatedconv");
  Generator g(0);
  ConvSeqOptions o;
  o.kernel_size = 3, o.dilation = 2;
  GLUConvBlock m("dilatedconv", 6, o, g);
  auto p = test::zoo_load_into(m, f);
  Var x(f.at("input").clone(), true);
  test::zoo_check(f, m.forward(x, Tensor()), x, p, test::kFixture);
}
