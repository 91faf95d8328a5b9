// tests/nn/models/test_t5_decode.cpp - T5Model's decoder as a recurrence (nn/models/t5.h, "Decoding as a recurrence"):
// decode_step at every target position gives decode_logits' row for a padded encoder batch, past the exact relative
// buckets into the log-spaced ones; greedy on the stream picks the tokens of greedy by recompute (its reference twin);
// bad steps are named. (The PyTorch fixture's greedy tokens are checked in test_models.cpp's T5 test.)
// Shape letters: B batch, S source time, T target time, V vocab.
#include "nn/models/t5.h"
#include "nn/nn_test_util.h"

using namespace dl;
using namespace dl::nn;

namespace {

constexpr int64_t kB = 3, kS = 9, kT = 14, kV = 30;
const std::vector<int64_t> kSourceLengths = {9, 5, 2};  // right padding: rows 1 and 2 end early

// The decoder's float32 whole-sequence ops against its per-position ones: a different summation order
// (test_seq2seq_decode.cpp's kDecode).
constexpr test::Tol kDecode{1e-4, 2e-5};

T5Config tiny() {
  T5Config c;
  // 8 buckets, max distance 16: over 14 target positions the decoder's buckets run from exact (0..3) to log-spaced
  c.vocab_size = kV, c.d_model = 16, c.d_kv = 8, c.d_ff = 32, c.num_layers = 2, c.num_heads = 2, c.num_buckets = 8,
  c.max_distance = 16;
  return c;
}

Tensor random_ids(Generator& g, int64_t B, int64_t T) {
  Tensor t = Tensor::empty({B, T}, DType::i64);
  for (int64_t i = 0; i < B * T; i++) t.data<int64_t>()[i] = 1 + (int64_t)(g.next_u64() % (kV - 1));
  return t;
}

// Random source ids (junk in the padding too) and their mask (B, S).
std::pair<Tensor, Tensor> padded_source(Generator& g) {
  Tensor ids = random_ids(g, kB, kS), mask = zeros({kB, kS});
  for (int64_t b = 0; b < kB; b++)
    for (int64_t t = 0; t < kSourceLengths[b]; t++) mask.data<float>()[b * kS + t] = 1.f;
  return {ids, mask};
}

}  // namespace

TEST(T5Decode, StepsGiveDecodeLogitsAtEveryPosition) {
  Generator g(31);
  T5Model m(tiny(), g);
  auto [ids, mask] = padded_source(g);
  Tensor dec_in = random_ids(g, kB, kT);
  dec_in.data<int64_t>()[0] = 0;  // the start id, as greedy feeds it
  NoGradGuard ng;
  Var enc = m.encode(ids, mask);
  Tensor full = m.decode_logits(dec_in, enc, mask).data();  // (B, T, V)
  T5DecodeState s = m.start_decode(enc, mask);
  for (int64_t t = 0; t < kT; t++) {
    Tensor y = m.decode_step(dec_in.narrow(1, t, 1).reshape({kB}).contiguous(), s).data();  // (B, V)
    EXPECT_TRUE(
        test::all_close(y, full.narrow(1, t, 1).reshape({kB, kV}).contiguous(), kDecode, "position " + std::to_string(t)));
  }
  EXPECT_EQ(s.pos, kT);
  EXPECT_EQ(s.blocks[1].self_k.shape(), (Shape{kB, 2, kT, 8}));  // the cache holds every position, per head
}

TEST(T5Decode, GreedyOnTheStreamPicksTheTokensOfGreedyByRecompute) {
  for (uint64_t seed : {32, 33, 34}) {
    Generator g(seed);
    T5Model m(tiny(), g);
    // untrained logits follow the last token whatever came before; weights 3x larger make every earlier position
    // and the source count, so a stream that lost its context would pick other tokens
    for (auto& p : m.parameters()) p.mutable_data().copy_(mul_scalar(p.data(), 3.0));
    auto [ids, mask] = padded_source(g);
    Tensor streamed = m.greedy(ids, mask, kT), recomputed = m.greedy_by_recompute(ids, mask, kT);
    EXPECT_EQ(streamed.shape(), (Shape{kB, kT}));
    EXPECT_EQ(streamed.to_vector(), recomputed.to_vector()) << "seed " << seed;
  }
}

TEST(T5Decode, BadStepsAreNamed) {
  Generator g(35);
  T5Model m(tiny(), g);
  auto [ids, mask] = padded_source(g);
  NoGradGuard ng;
  Var enc = m.encode(ids, mask);
  T5DecodeState s = m.start_decode(enc, mask);
  EXPECT_NE(test::error_of([&] {
              m.decode_step(zeros({kB, 1}, DType::i64), s);
            }).find("one token id per sequence (B) i64"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { m.decode_step(zeros({kB + 1}, DType::i64), s); }).find("a batch of 4"), std::string::npos);
  EXPECT_NE(test::error_of([&] {
              m.start_decode(enc, zeros({kB, kS + 1}));
            }).find("must be (B, S) = [3, 9], found [3, 10]"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] {
              m.start_decode(Var(zeros({kB, kS})), Tensor());
            }).find("start_decode expects the encoder output (B, S, 16)"),
            std::string::npos);
}
