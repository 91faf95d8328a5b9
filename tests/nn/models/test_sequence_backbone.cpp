// tests/nn/models/test_sequence_backbone.cpp - the shared sequence backbone (nn/models/sequence_backbone.h): the
// parameter names and draw order the apps' checkpoints rely on, the masked pools on a padded batch, the errors that
// name a bad option or a too-long sequence, and a learning test (a registry mixer in the backbone learns a padded
// token task that chance cannot pass).
#include "nn/models/sequence_backbone.h"
#include "nn/init.h"
#include "nn/nn_test_util.h"
#include "optim/adam.h"

using namespace dl;
using namespace dl::nn;

namespace {

SequenceBackboneOptions small(const std::string& positions = "learned") {
  SequenceBackboneOptions o;
  o.vocab = 12, o.d_model = 16, o.max_len = 10, o.layers = 2, o.positions = positions;
  o.block.ffn_hidden = 32;
  return o;
}

MixerFactory attention() { return registry_mixer("attention", BackboneOptions{0.0, false, 10}); }

}  // namespace

TEST(SequenceBackbone, NamesAndDrawOrderAreTheCheckpointsOnes) {
  Generator g(3);
  SequenceBackbone m(small(), attention(), g);
  std::map<std::string, Tensor> p;
  for (auto& [n, v] : m.named_parameters()) p[n] = v.data();
  for (const char* n : {"embed.weight", "pos", "blocks.0.mixer.in_proj_weight", "blocks.1.ffn.fc2.bias", "final_norm.bias"})
    EXPECT_EQ(p.count(n), 1u) << n;
  // the draws go embedding, positions, then per block its mixer before its feed-forward: the same seed builds the same
  // weights as the modules built by hand in that order
  Generator h(3);
  auto embed = std::make_shared<Embedding>(12, 16, h);
  Tensor pos = init::normal({10, 16}, 0.02, h);
  auto mixer = make_layer("attention", 16, backbone_config(find_layer("attention"), BackboneOptions{0.0, false, 10}), h);
  ResidualBlockOptions bo;
  bo.ffn_hidden = 32;
  ResidualBlock block(mixer, 16, bo, h);
  const test::Tol exact{0, 0};  // the same draws: the same bits
  EXPECT_TRUE(test::all_close(p["embed.weight"], embed->weight.data(), exact, "embed.weight"));
  EXPECT_TRUE(test::all_close(p["pos"], pos, exact, "pos"));
  auto mine = m.block(0).named_parameters(), by_hand = block.named_parameters();
  ASSERT_EQ(mine.size(), by_hand.size());
  for (size_t i = 0; i < mine.size(); i++)
    EXPECT_TRUE(test::all_close(mine[i].second.data(), by_hand[i].second.data(), exact, "blocks.0." + mine[i].first));
}

TEST(SequenceBackbone, MeanAndLastPoolsReadOnlyRealPositions) {
  // h[b, l, :] = 10 b + l; row 0 has 3 real positions of 4, row 1 all 4
  std::vector<float> hv(2 * 4 * 2);
  for (int b = 0; b < 2; b++)
    for (int l = 0; l < 4; l++)
      for (int d = 0; d < 2; d++) hv[(b * 4 + l) * 2 + d] = 10.f * b + l;
  Var h(from_vector(hv, {2, 4, 2}));
  Tensor mask = from_vector(std::vector<float>{1, 1, 1, 0, 1, 1, 1, 1}, {2, 4});
  Tensor mean = SequenceBackbone::pool(h, mask, "mean").data();
  EXPECT_FLOAT_EQ(mean.data<float>()[0], 1.f);   // (0 + 1 + 2) / 3, not / 4 and not with the padding's 3
  EXPECT_FLOAT_EQ(mean.data<float>()[2], 11.5f);  // (10 + 11 + 12 + 13) / 4
  Tensor last = SequenceBackbone::pool(h, mask, "last").data();
  EXPECT_FLOAT_EQ(last.data<float>()[0], 2.f);
  EXPECT_FLOAT_EQ(last.data<float>()[2], 13.f);
  EXPECT_NE(test::error_of([&] { SequenceBackbone::pool(h, mask, "max"); }).find("\"max\""), std::string::npos);
}

TEST(SequenceBackbone, BadOptionsAndTooLongSequencesAreNamed) {
  Generator g(0);
  std::string e = test::error_of([&] { SequenceBackbone(small("rope"), attention(), g); });
  EXPECT_NE(e.find("positions must be \"none\", \"learned\" or \"sinusoidal\", found \"rope\""), std::string::npos) << e;
  auto o = small();
  o.vocab = 0;
  e = test::error_of([&] { SequenceBackbone(o, attention(), g); });
  EXPECT_NE(e.find("give a vocabulary"), std::string::npos) << e;
  SequenceBackbone m(small("sinusoidal"), attention(), g);
  e = test::error_of([&] { m.encode(zeros({1, 11}, DType::i64), ones({1, 11})); });
  EXPECT_NE(e.find("length 11 is longer than the positions table (10)"), std::string::npos) << e;
}

// Padded sequences of ids 4..11 (lengths 4..10, padding id 0) holding one id 2 and one id 3: does the 2 come first?
// Both orders have the same tokens, so a mean of embeddings is at chance (50%): the mixer must carry order, and the
// pool must skip the padding. 200 AdamW steps reach >= 95% on fresh examples (399 and 400 of 400) for an attention and an S4D backbone;
// with the blocks bypassed (x = x + 0 * block(x)) they reached 344 and 198.
TEST(SequenceBackbone, LearnsAPaddedTokenTask) {
  for (const std::string layer : {"attention", "s4d"}) {
    Generator g(1), data(7);
    SequenceBackboneOptions o = small(layer == "attention" ? "learned" : "none");
    o.layers = 1;
    SequenceBackbone m(o, registry_mixer(layer, BackboneOptions{0.0, false, 10}), g);
    Linear head(16, 2, g);
    std::vector<Var> params = m.parameters();
    for (auto& p : head.parameters()) params.push_back(p);
    optim::AdamWOptions ao;
    ao.lr = 1e-2;
    optim::AdamW opt(params, ao);
    auto batch = [&](int B, Tensor& tok, Tensor& mask, Tensor& y) {
      tok = zeros({B, 10}, DType::i64), mask = zeros({B, 10}), y = zeros({B}, DType::i64);
      for (int b = 0; b < B; b++) {
        const int len = 4 + (int)(data.next_u64() % 7), i = (int)(data.next_u64() % len);
        const int j = (i + 1 + (int)(data.next_u64() % (len - 1))) % len;  // another position
        for (int l = 0; l < len; l++) tok.data<int64_t>()[b * 10 + l] = 4 + (int64_t)(data.next_u64() % 8);
        for (int l = 0; l < len; l++) mask.data<float>()[b * 10 + l] = 1;
        tok.data<int64_t>()[b * 10 + i] = 2, tok.data<int64_t>()[b * 10 + j] = 3;
        y.data<int64_t>()[b] = i < j;
      }
    };
    Tensor tok, mask, y;
    for (int step = 0; step < 200; step++) {
      batch(32, tok, mask, y);
      opt.zero_grad();
      Var loss = cross_entropy(head.forward(SequenceBackbone::pool(m.encode(tok, mask), mask)), y);
      loss.backward();
      opt.step();
    }
    NoGradGuard ng;
    batch(400, tok, mask, y);
    Tensor pred = argmax(head.forward(SequenceBackbone::pool(m.encode(tok, mask), mask)).data(), 1);
    int correct = 0;
    for (int b = 0; b < 400; b++) correct += pred.data<int64_t>()[b] == y.data<int64_t>()[b];
    EXPECT_GE(correct, 380) << layer << ": " << correct << " of 400";
  }
}

// A causal backbone (attention with learned positions, S4D) run one token at a time gives encode's states at every
// position; one that looks ahead refuses, naming the block.
TEST(SequenceBackbone, CausalBackboneStepsAsItsEncode) {
  for (const std::string layer : {"attention", "s4d"}) {
    Generator g(2);
    SequenceBackboneOptions o = small(layer == "attention" ? "learned" : "sinusoidal");
    SequenceBackbone m(o, registry_mixer(layer, BackboneOptions{0.0, /*causal=*/true, 10}), g);
    m.eval();
    Tensor tok = zeros({2, 10}, DType::i64);
    for (int64_t i = 0; i < 20; i++) tok.data<int64_t>()[i] = (int64_t)(g.next_u64() % 12);
    NoGradGuard ng;
    Tensor full = m.encode(tok, Tensor()).data();  // (2, 10, 16)
    StreamState s = m.start_stream(2);
    for (int64_t t = 0; t < 10; t++) {
      Tensor y = m.step(tok.narrow(1, t, 1).reshape({2}).contiguous(), s).data();
      EXPECT_TRUE(test::all_close(y, full.narrow(1, t, 1).reshape({2, 16}).contiguous(), test::Tol{1e-4, 2e-5},
                                  layer + " position " + std::to_string(t)));
    }
    EXPECT_NE(test::error_of([&] { m.step(zeros({2}, DType::i64), s); }).find("position 10 is past the positions table (10)"),
              std::string::npos);
  }
  Generator g(3);
  SequenceBackbone bidirectional(small(), attention(), g);  // attention() is not causal
  EXPECT_NE(test::error_of([&] { bidirectional.start_stream(1); }).find("block 0 (MultiheadAttention, norm layer) looks at"),
            std::string::npos);
}
