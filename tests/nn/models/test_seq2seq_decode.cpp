// tests/nn/models/test_seq2seq_decode.cpp - the encoder-decoder's decoder as a recurrence (nn/models/seq2seq.h,
// "Decoding as a recurrence"): for the Transformer (key/value cache and the relative position bias row), the three
// convolutions, S4D, the LSTM and registry attention (their own streams), and the pair-attention model, decode_step at
// every target position gives decode_logits' row for a padded encoder batch; greedy on the stream picks the same tokens
// as greedy by recompute, stopping rows included; a mixer that cannot stream refuses in start_decode, naming itself;
// bad steps are named.
#include "nn/conv/conv_seq.h"
#include "nn/models/seq2seq.h"
#include "nn/nn_test_util.h"

using namespace dl;
using namespace dl::nn;

namespace {

constexpr int64_t kB = 3, kS = 9, kT = 11, kV = 30;
const std::vector<int64_t> kSourceLengths = {9, 5, 2};  // right padding: rows 1 and 2 end early

// The decoder's float32 whole-sequence ops against its per-position ones (a different summation order); S4D's step
// runs its recurrence in float64 against the float32 FFT convolution (tests/nn/test_streaming.cpp's kStream).
constexpr test::Tol kDecode{1e-4, 2e-5};

Seq2SeqConfig tiny(const std::string& mixer) {
  Seq2SeqConfig c;
  c.vocab_size = kV, c.d_model = 16, c.d_ff = 32, c.num_layers = 2, c.num_decoder_layers = 2, c.num_heads = 2;
  // 8 buckets, max distance 16: over 11 target positions the decoder's buckets run from exact (0..1) to log-spaced
  c.num_buckets = 8, c.max_distance = 16, c.mixer = mixer, c.kernel_sizes = {3, 5}, c.dilations = {1, 2};
  return c;
}

Tensor random_ids(Generator& g, int64_t B, int64_t T) {
  Tensor t = Tensor::empty({B, T}, DType::i64);
  for (int64_t i = 0; i < B * T; i++) t.data<int64_t>()[i] = 1 + (int64_t)(g.next_u64() % (kV - 1));
  return t;
}

// A padded source batch: random ids (junk in the padding too), its mask, and two segments split in the middle of
// each row's real part (for the pair block).
struct Source {
  Tensor ids, mask, segments;
};
Source padded_source(Generator& g) {
  Source s{random_ids(g, kB, kS), zeros({kB, kS}), zeros({kB, kS}, DType::i64)};
  for (int64_t b = 0; b < kB; b++)
    for (int64_t t = 0; t < kS; t++) {
      s.mask.data<float>()[b * kS + t] = t < kSourceLengths[b] ? 1.f : 0.f;
      s.segments.data<int64_t>()[b * kS + t] = t >= kSourceLengths[b] / 2 ? 1 : 0;
    }
  return s;
}

std::shared_ptr<Module> child(const Module& m, const std::string& name) {
  for (auto& [n, c] : m.named_children())
    if (n == name) return c;
  throw std::runtime_error("no child " + name);
}

// Steps m's decoder through dec_in (B, T) and compares each position's logits with decode_logits' row.
::testing::AssertionResult steps_equal_decode_logits(Seq2SeqModel& m, const Source& src, const Tensor& dec_in,
                                                     const std::string& what) {
  NoGradGuard ng;
  Var enc = m.encode(src.ids, src.mask, m.cfg.pair_attention ? src.segments : Tensor());
  Tensor full = m.decode_logits(dec_in, enc, src.mask).data();  // (B, T, V)
  DecodeState s = m.start_decode(enc, src.mask);
  for (int64_t t = 0; t < dec_in.size(1); t++) {
    Tensor y = m.decode_step(dec_in.narrow(1, t, 1).reshape({kB}).contiguous(), s).data();  // (B, V)
    auto r =
        test::all_close(y, full.narrow(1, t, 1).reshape({kB, kV}).contiguous(), kDecode, what + " position " + std::to_string(t));
    if (!r) return r;
  }
  if (s.pos != dec_in.size(1)) return ::testing::AssertionFailure() << what << ": pos " << s.pos;
  return ::testing::AssertionSuccess();
}

}  // namespace

TEST(Seq2SeqDecode, StepsGiveDecodeLogitsAtEveryPosition) {
  // the five, and two more registry layers through their own streams (the LSTM's h and c, attention's cache)
  for (std::string mixer : {"transformer", "lightconv", "dynamicconv", "dilatedconv", "s4d", "lstm", "attention"}) {
    Generator g(21);
    Seq2SeqModel m(tiny(mixer), g);
    m.eval();
    Tensor dec_in = random_ids(g, kB, kT);
    dec_in.data<int64_t>()[0] = 0;  // the start id, as greedy feeds it
    EXPECT_TRUE(steps_equal_decode_logits(m, padded_source(g), dec_in, mixer));
  }
}

TEST(Seq2SeqDecode, PairAttentionModelStepsGiveDecodeLogits) {
  for (std::string mixer : {"lightconv", "transformer"}) {
    Seq2SeqConfig c = tiny(mixer);
    c.pair_attention = true;
    Generator g(22);
    Seq2SeqModel m(c, g);
    m.eval();
    EXPECT_TRUE(steps_equal_decode_logits(m, padded_source(g), random_ids(g, kB, kT), mixer + " + pair block"));
  }
}

TEST(Seq2SeqDecode, GreedyOnTheStreamPicksTheTokensOfGreedyByRecompute) {
  for (std::string mixer : {"transformer", "lightconv", "dynamicconv", "dilatedconv", "s4d"}) {
    SCOPED_TRACE(mixer);
    for (bool pair : {false, true}) {
      Seq2SeqConfig c = tiny(mixer);
      c.pair_attention = pair;
      Generator g(23);
      Seq2SeqModel m(c, g);
      m.eval();
      // untrained logits follow the last token whatever came before; weights 3x larger make every earlier position
      // and the source count, so a stream that lost its context would pick other tokens
      for (auto& p : m.parameters()) p.mutable_data().copy_(mul_scalar(p.data(), 3.0));
      Source src = padded_source(g);
      Tensor seg = pair ? src.segments : Tensor();
      Tensor plain = m.greedy_by_recompute(src.ids, src.mask, 12, /*stop_id=*/-1, seg);
      EXPECT_EQ(m.greedy(src.ids, src.mask, 12, -1, seg).to_vector(), plain.to_vector());
      // a stop id that row 0 emits at its third token: that row stops and pads, the others go on
      const int64_t stop = plain.data<int64_t>()[2];
      Tensor a = m.greedy(src.ids, src.mask, 12, stop, seg), b = m.greedy_by_recompute(src.ids, src.mask, 12, stop, seg);
      EXPECT_EQ(a.shape(), b.shape());
      EXPECT_EQ(a.to_vector(), b.to_vector());
    }
  }
}

// Every mixer a decoder can be built with is causal, and every causal registry layer streams; a mixer that does not
// (here a causal convolution switched to centred after the model was built) refuses in start_decode, naming itself.
TEST(Seq2SeqDecode, AMixerThatCannotStreamRefusesNamingItself) {
  Generator g(24);
  Seq2SeqModel m(tiny("lightconv"), g);
  auto conv = std::dynamic_pointer_cast<GLUConvBlock>(child(*child(*m.decoder, "1"), "mixer"));
  ASSERT_TRUE(conv);
  conv->opt.causal = false;
  Source src = padded_source(g);
  NoGradGuard ng;
  Var enc = m.encode(src.ids, src.mask);
  std::string err = test::error_of([&] { m.start_decode(enc, src.mask); });
  EXPECT_NE(err.find("decoder block 1's mixer 'lightconv' cannot decode one position at a time"), std::string::npos) << err;
  EXPECT_NE(err.find("layer GLUConvBlock(lightconv) looks at later positions"), std::string::npos) << err;
}

TEST(Seq2SeqDecode, BadStepsAreNamed) {
  Generator g(25);
  Seq2SeqModel m(tiny("transformer"), g);
  Source src = padded_source(g);
  NoGradGuard ng;
  Var enc = m.encode(src.ids, src.mask);
  DecodeState s = m.start_decode(enc, src.mask);
  EXPECT_NE(test::error_of([&] {
              m.decode_step(zeros({kB, 1}, DType::i64), s);
            }).find("one token id per sequence (B) i64"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { m.decode_step(zeros({kB + 1}, DType::i64), s); }).find("a batch of 4"), std::string::npos);
  EXPECT_NE(test::error_of([&] {
              m.start_decode(enc, zeros({kB, kS + 1}));
            }).find("must be (B, S) = [3, 9], found [3, 10]"),
            std::string::npos);
}
