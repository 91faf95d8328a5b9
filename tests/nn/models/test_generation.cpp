// tests/nn/models/test_generation.cpp - generation's parts: GPT-2's key/value-cache step gives forward's logits at
// every position and the same greedy text as recomputing the prefix; sampling keeps what temperature, top-k and
// top-p say, draws in proportion to the probabilities, repeats itself for a seed, and names bad options.
#include <map>

#include "nn/models/gpt2.h"
#include "nn/models/sampling.h"
#include "nn/nn_test_util.h"

using namespace dl;
using namespace dl::nn;

namespace {

std::shared_ptr<GPT2Model> tiny_lm(Generator& g) {
  GPT2Config c;
  c.vocab_size = 40, c.n_positions = 12, c.n_embd = 16, c.n_layer = 2, c.n_head = 2;
  auto m = std::make_shared<GPT2Model>(c, g);
  m->eval();
  return m;
}

constexpr test::Tol kStep{1e-4, 1e-5};  // the packed attention kernel against the cache's composed attention

}  // namespace

TEST(Generation, CachedStepsGiveForwardsLogitsAtEveryPosition) {
  Generator g(4);
  auto lm = tiny_lm(g);
  GPT2Model& m = *lm;
  const int64_t B = 2, T = 12;
  std::vector<int64_t> ids(B * T);
  for (auto& i : ids) i = (int64_t)(g.next_u64() % 40);
  Tensor idx = from_vector(ids, {B, T});
  NoGradGuard ng;
  Tensor full = m.forward(idx).data();  // (B, T, V)
  StreamState s = m.start_stream(B);
  for (int64_t t = 0; t < T; t++) {
    Tensor y = m.step(idx.narrow(1, t, 1).reshape({B}).contiguous(), s).data();  // (B, V)
    EXPECT_TRUE(test::all_close(y, full.narrow(1, t, 1).reshape({B, 40}).contiguous(), kStep, "position " + std::to_string(t)));
  }
  std::string err = test::error_of([&] { m.step(zeros({B}, DType::i64), s); });
  EXPECT_NE(err.find("position 12 is past n_positions 12"), std::string::npos) << err;
  EXPECT_NE(test::error_of([&] { m.step(zeros({B, 1}, DType::i64), s); }).find("one token id per sequence"), std::string::npos);
}

TEST(Generation, GreedyTextIsTheSameWithTheCacheAndByRecomputing) {
  Generator g(9);
  auto lm = tiny_lm(g);
  GPT2Model& m = *lm;
  // at GPT-2's init (std 0.02) the tied logits follow the last token whatever came before, and a cache that lost the
  // context would pick the same tokens: weights 20x larger make every earlier position count
  for (auto& p : m.parameters()) p.mutable_data().copy_(mul_scalar(p.data(), 20.0));
  NoGradGuard ng;
  std::vector<int64_t> cached = {3}, recomputed = {3};
  StreamState s = m.start_stream(1);
  Tensor logits = m.step(from_vector(std::vector<int64_t>{3}, {1}), s).data();
  for (int t = 0; t < 10; t++) {
    cached.push_back(argmax(logits, 1).data<int64_t>()[0]);
    logits = m.step(from_vector(std::vector<int64_t>{cached.back()}, {1}), s).data();
    const int64_t T = (int64_t)recomputed.size();
    Tensor all = m.forward(from_vector(recomputed, {1, T})).data();
    recomputed.push_back(argmax(all.narrow(1, T - 1, 1).reshape({1, 40}).contiguous(), 1).data<int64_t>()[0]);
  }
  EXPECT_EQ(cached, recomputed);
}

TEST(Sampling, GreedyTopKAndTopPKeepWhatTheySay) {
  // probabilities at temperature 1: softmax of log(0.5, 0.3, 0.15, 0.05)
  const std::vector<float> logits = {std::log(0.15f), std::log(0.5f), std::log(0.05f), std::log(0.3f)};
  Generator g(1);
  SamplingOptions greedy;
  greedy.temperature = 0;
  EXPECT_EQ(sample_token(logits.data(), 4, greedy, g), 1);
  auto seen = [&](SamplingOptions o) {
    std::map<int64_t, int> n;
    for (int i = 0; i < 4000; i++) n[sample_token(logits.data(), 4, o, g)]++;
    return n;
  };
  SamplingOptions k2;
  k2.top_k = 2;  // ids 1 and 3 only, in proportion 0.5 : 0.3
  auto n = seen(k2);
  EXPECT_EQ(n.size(), 2u);
  EXPECT_NEAR(n[1] / 4000.0, 0.5 / 0.8, 0.03);
  SamplingOptions p;
  p.top_p = 0.8;  // 0.5 + 0.3 reaches 0.8: the same two
  EXPECT_EQ(seen(p).size(), 2u);
  p.top_p = 0.81;  // needs the third
  EXPECT_EQ(seen(p).size(), 3u);
  SamplingOptions all;  // every id, each near its probability (4000 draws: standard error < 0.008)
  n = seen(all);
  EXPECT_NEAR(n[0] / 4000.0, 0.15, 0.03);
  EXPECT_NEAR(n[1] / 4000.0, 0.5, 0.03);
  EXPECT_NEAR(n[2] / 4000.0, 0.05, 0.02);
  SamplingOptions cold;
  cold.temperature = 0.25;  // p^4 renormalised: id 1 takes 0.5^4 / (0.5^4 + 0.3^4 + 0.15^4 + 0.05^4) = 0.878
  EXPECT_NEAR(seen(cold)[1] / 4000.0, 0.878, 0.03);
}

TEST(Sampling, TheSameSeedDrawsTheSameTokens) {
  std::vector<float> logits(50);
  for (int i = 0; i < 50; i++) logits[i] = std::sin((float)i);
  SamplingOptions o;
  o.temperature = 0.9, o.top_k = 20, o.top_p = 0.95;
  auto draw = [&](uint64_t seed) {
    Generator g(seed);
    std::vector<int64_t> out;
    for (int i = 0; i < 30; i++) out.push_back(sample_token(logits.data(), 50, o, g));
    return out;
  };
  EXPECT_EQ(draw(7), draw(7));
  EXPECT_NE(draw(7), draw(8));
}

TEST(Sampling, BadOptionsAreNamed) {
  const float l[2] = {0, 1};
  Generator g(0);
  SamplingOptions o;
  o.temperature = -1;
  EXPECT_NE(test::error_of([&] { sample_token(l, 2, o, g); }).find("temperature must be"), std::string::npos);
  o = {}, o.top_k = -2;
  EXPECT_NE(test::error_of([&] { sample_token(l, 2, o, g); }).find("top_k must be >= 0"), std::string::npos);
  o = {}, o.top_p = 0;
  EXPECT_NE(test::error_of([&] { sample_token(l, 2, o, g); }).find("top_p must lie in (0, 1]"), std::string::npos);
  const float nan[2] = {NAN, NAN};
  EXPECT_NE(test::error_of([&] { sample_token(nan, 2, {}, g); }).find("no finite maximum"), std::string::npos);
}
