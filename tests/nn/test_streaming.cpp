// tests/nn/test_streaming.cpp - every registry layer run one position at a time (nn/sequence_layer.h, streaming):
// a causal layer's steps equal its whole-sequence forward at every real position of a right-padded batch, alone and
// inside a residual block; the layers with a recurrence of their own keep a state that does not grow; a layer that
// looks ahead refuses, naming itself.
#include <set>

#include "nn/nn_test_util.h"
#include "nn/registry.h"
#include "nn/residual_block.h"

using namespace dl;
using namespace dl::nn;

namespace {

constexpr int64_t kB = 3, kL = 12, kH = 8;
const std::vector<int64_t> kLengths = {12, 7, 1};  // right padding: rows 1 and 2 end early
// float32 forward (FFT convolutions, fused kernels) against the step's float64 recurrence or its per-position ops
constexpr test::Tol kStream{1e-4, 2e-5};
// The layers that carry a state of fixed size from one position to the next (the others, when causal, recompute
// over the inputs so far, or, for attention, keep a key/value cache that grows by design).
const std::set<std::string> kRecurrent = {"s4", "s4d", "s4d_minimal", "dlr", "ema", "lstm", "linear_attention",
                                          "lightconv", "dynamicconv", "dilatedconv"};
// The Performer's keys share one stabiliser, their maximum over the whole sequence (as the official FAVOR+ code
// does): it cancels in num / den except against den's eps, so a position's output moves with later keys by ~2e-3
// here. Causal up to that; its stream (a recompute over the prefix) is checked to this looser bound.
constexpr test::Tol kPerformer{5e-3, 5e-3};

std::shared_ptr<SequenceLayer> causal_layer(const LayerEntry& e, Generator& g) {
  BackboneOptions o;
  o.causal = true, o.max_len = kL, o.d_state = 8, o.heads = 2;
  return e.make(kH, backbone_config(e, o), g);
}

Tensor padding_mask() {
  Tensor m = zeros({kB, kL});
  for (int64_t b = 0; b < kB; b++)
    for (int64_t l = 0; l < kLengths[b]; l++) m.data<float>()[b * kL + l] = 1;
  return m;
}

// Steps through x (B, L, H) and compares each position with full (B, L, H) at the real positions.
::testing::AssertionResult steps_equal_forward(SequenceLayer& m, const Tensor& x, const Tensor& full, const std::string& what,
                                               test::Tol tol = kStream) {
  StreamState s = m.start_stream(kB);
  const size_t state_tensors = s.t.size();
  std::vector<Shape> state_shapes;
  for (auto& t : s.t) state_shapes.push_back(t.shape());
  for (int64_t l = 0; l < kL; l++) {
    Tensor y = m.step(Var(x.narrow(1, l, 1).reshape({kB, kH}).contiguous()), s).data();
    for (int64_t b = 0; b < kB; b++) {
      if (l >= kLengths[b]) continue;
      auto r = test::all_close(y.narrow(0, b, 1).contiguous(), full.narrow(0, b, 1).narrow(1, l, 1).reshape({1, kH}).contiguous(),
                               tol, what + " row " + std::to_string(b) + " position " + std::to_string(l));
      if (!r) return r;
    }
    if (m.streams_in_constant_memory()) {
      if (s.t.size() != state_tensors) return ::testing::AssertionFailure() << what << ": the state gained tensors";
      for (size_t i = 0; i < s.t.size(); i++)
        if (s.t[i].shape() != state_shapes[i]) return ::testing::AssertionFailure() << what << ": state tensor " << i << " grew";
    }
  }
  if (s.pos != kL) return ::testing::AssertionFailure() << what << ": pos " << s.pos << " after " << kL << " steps";
  return ::testing::AssertionSuccess();
}

}  // namespace

TEST(Streaming, EveryCausalLayerStepsAsItsForward) {
  std::vector<std::string> causal, refused;
  for (const LayerEntry& e : layer_registry()) {
    Generator g(11);
    auto m = causal_layer(e, g);
    m->eval();
    if (!m->is_causal()) {
      std::string err = test::error_of([&] { m->start_stream(kB); });
      EXPECT_NE(err.find("layer " + m->type_name() + " looks at later positions"), std::string::npos) << e.name << ": " << err;
      refused.push_back(e.name);
      continue;
    }
    causal.push_back(e.name);
    Tensor x = randn({kB, kL, kH}, g), mask = padding_mask();
    NoGradGuard ng;
    Tensor full = m->forward(Var(x), mask).data();
    EXPECT_TRUE(steps_equal_forward(*m, x, full, e.name, e.name == "performer" ? kPerformer : kStream));
    EXPECT_EQ(m->streams_in_constant_memory(), kRecurrent.count(e.name) == 1) << e.name;
  }
  // the registry's causal layers today; a new causal layer joins the loop above by itself
  for (const char* n : {"attention", "lstm", "s4d", "dlr"})
    EXPECT_NE(std::find(causal.begin(), causal.end(), n), causal.end()) << n << " should be causal when asked";
  EXPECT_FALSE(refused.empty());
}

TEST(Streaming, ResidualBlocksStepAsTheirForward) {
  for (const char* name : {"attention", "s4d", "lstm"}) {
    Generator g(5);
    ResidualBlockOptions bo;
    bo.ffn_hidden = 16;
    for (bool prenorm : {true, false}) {
      bo.prenorm = prenorm;
      ResidualBlock blk(causal_layer(find_layer(name), g), kH, bo, g);
      blk.eval();
      Tensor x = randn({kB, kL, kH}, g);
      NoGradGuard ng;
      Tensor full = blk.forward(Var(x), padding_mask()).data();
      EXPECT_TRUE(steps_equal_forward(blk, x, full, std::string(name) + (prenorm ? " prenorm" : " postnorm")));
    }
  }
  // a batch-norm block mixes positions through its statistics: not causal, so it refuses
  ResidualBlockOptions bn;
  bn.norm = "batch";
  Generator g(1);
  ResidualBlock blk(causal_layer(find_layer("s4d"), g), kH, bn, g);
  EXPECT_NE(test::error_of([&] { blk.start_stream(2); }).find("layer ResidualBlock looks at later positions"), std::string::npos);
}

// Attention's options that touch the cache: rotary positions turned at each step's position, a window that keeps the
// last window + 1 keys, several heads.
TEST(Streaming, AttentionWithRotaryAndWindowStepsAsItsForward) {
  for (const char* cfg : {R"({"causal": true, "rotary": true, "heads": 2})", R"({"causal": true, "window": 3, "heads": 4})",
                          R"({"causal": true, "rotary": true, "window": 5, "heads": 1})"}) {
    Generator g(8);
    auto m = make_layer("attention", kH, LayerConfig::parse(cfg), g);
    m->eval();
    Tensor x = randn({kB, kL, kH}, g);
    NoGradGuard ng;
    Tensor full = m->forward(Var(x), padding_mask()).data();
    EXPECT_TRUE(steps_equal_forward(*m, x, full, cfg));
  }
}

TEST(Streaming, BadStepsAreNamed) {
  Generator g(2);
  auto s4d = causal_layer(find_layer("s4d"), g);
  StreamState s = s4d->start_stream(2);
  EXPECT_NE(test::error_of([&] {
              s4d->step(Var(zeros({3, kH})), s);
            }).find("does not come from start_stream(3)"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] {
              s4d->step(Var(zeros({2, kH + 1})), s);
            }).find("step takes one position (B, 8)"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { s4d->start_stream(0); }).find("a batch of at least 1"), std::string::npos);
}
