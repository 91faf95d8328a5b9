// tests/nn/models/test_seq2seq.cpp - the mixer-by-name encoder-decoder (nn/models/seq2seq.h): with the transformer
// mixer and T5's weights it gives the recorded PyTorch T5's logits and greedy output (tests/fixtures/nn_models.py
// t5_tiny); every mixer's decoder is causal; padding never reaches real positions; the pair block lets a segment see
// only the other one.
#include <regex>

#include "nn/models/seq2seq.h"
#include "nn/nn_test_util.h"

using namespace dl;
using namespace dl::test;
using namespace dl::nn;

namespace {

Seq2SeqConfig tiny(const std::string& mixer) {
  Seq2SeqConfig c;
  c.vocab_size = 30, c.d_model = 16, c.d_ff = 32, c.num_layers = 2, c.num_decoder_layers = 2, c.num_heads = 2;
  c.num_buckets = 8, c.max_distance = 16, c.mixer = mixer, c.kernel_sizes = {3, 5}, c.dilations = {1, 2};
  return c;
}

Tensor ids_of(const std::vector<int64_t>& v, int64_t B, int64_t T) {
  Tensor t = Tensor::empty({B, T}, DType::i64);
  for (int64_t i = 0; i < B * T; i++) t.data<int64_t>()[i] = v[i % v.size()];
  return t;
}

// HF T5 names -> the shell's
std::string shell_name(const std::string& n) {
  static const std::vector<std::pair<std::regex, std::string>> rules = {
      {std::regex(R"(^(encoder|decoder)\.block\.(\d+)\.layer\.0\.SelfAttention\.)"), "$1.$2.attention."},
      {std::regex(R"(^(encoder|decoder)\.block\.(\d+)\.layer\.0\.layer_norm\.)"), "$1.$2.norm_mix."},
      {std::regex(R"(^decoder\.block\.(\d+)\.layer\.1\.EncDecAttention\.)"), "decoder.$1.cross."},
      {std::regex(R"(^decoder\.block\.(\d+)\.layer\.1\.layer_norm\.)"), "decoder.$1.norm_cross."},
      {std::regex(R"(^encoder\.block\.(\d+)\.layer\.1\.DenseReluDense\.)"), "encoder.$1."},
      {std::regex(R"(^encoder\.block\.(\d+)\.layer\.1\.layer_norm\.)"), "encoder.$1.norm_ff."},
      {std::regex(R"(^decoder\.block\.(\d+)\.layer\.2\.DenseReluDense\.)"), "decoder.$1."},
      {std::regex(R"(^decoder\.block\.(\d+)\.layer\.2\.layer_norm\.)"), "decoder.$1.norm_ff."},
      {std::regex(R"(^encoder\.final_layer_norm\.)"), "encoder_norm."},
      {std::regex(R"(^decoder\.final_layer_norm\.)"), "decoder_norm."}};
  for (auto& [re, to] : rules)
    if (std::regex_search(n, re)) return std::regex_replace(n, re, to);
  return n;
}

}  // namespace

TEST(Seq2Seq, TransformerMixerIsT5AndMatchesPyTorch) {
  Generator g(0);
  Seq2SeqModel m(tiny("transformer"), g);
  TensorFile f = nn_fixture("t5_tiny");
  std::map<std::string, Tensor> sd;
  for (auto& [n, t] : f.tensors)
    if (n.starts_with("shared.") || n.starts_with("encoder.") || n.starts_with("decoder.")) sd[shell_name(n)] = t;
  LoadReport rep = m.load_state_dict(sd);
  ASSERT_TRUE(rep.ok()) << "the shell's names differ from T5's mapped ones";
  Tensor ids = f.at("input"), mask = f.at("input1"), labels = f.at("input2");
  auto out = m.forward(ids, mask, labels);
  EXPECT_TRUE(all_close(out.logits.data(), f.at("extra.logits"), kFixtureLong, "logits"));
  EXPECT_EQ(m.greedy(ids, mask, 6, /*stop_id=*/-1).to_vector(), f.at("extra.greedy").to_vector());
}

TEST(Seq2Seq, EveryMixersDecoderIsCausal) {
  for (std::string mixer : {"transformer", "lightconv", "dynamicconv", "dilatedconv"}) {
    SCOPED_TRACE(mixer);
    Generator g(3);
    Seq2SeqModel m(tiny(mixer), g);
    NoGradGuard ng;
    Tensor ids = ids_of({5, 7, 9, 11, 13, 2, 4}, 2, 7), mask = full({2, 7}, 1.0);
    Var enc = m.encode(ids, mask);
    Tensor a = ids_of({1, 2, 3, 4, 5, 6}, 2, 6), b = a.clone();
    b.data<int64_t>()[4] = 20, b.data<int64_t>()[6 + 4] = 21;  // change position 4 of both rows
    Tensor la = m.decode_logits(a, enc, mask).data(), lb = m.decode_logits(b, enc, mask).data();
    for (int64_t r = 0; r < 2; r++)
      for (int64_t t = 0; t < 6; t++) {
        double diff = 0;
        for (int64_t v = 0; v < 30; v++) diff = std::max(diff, std::abs((double)la.at({r, t, v}) - (double)lb.at({r, t, v})));
        if (t < 4) EXPECT_EQ(diff, 0.0) << "position " << t << " saw the future";
        else EXPECT_GT(diff, 1e-6) << "position " << t << " ignores its own input";
      }
  }
}

TEST(Seq2Seq, PaddingNeverReachesRealPositions) {
  for (std::string mixer : {"transformer", "lightconv", "dynamicconv", "dilatedconv"}) {
    SCOPED_TRACE(mixer);
    Generator g(4);
    Seq2SeqModel m(tiny(mixer), g);
    NoGradGuard ng;
    // row 0: 5 real tokens then 3 pads holding junk ids; row 1 the same 5 tokens, other junk
    Tensor ids = ids_of({5, 7, 9, 11, 13, 17, 19, 23, 5, 7, 9, 11, 13, 1, 2, 3}, 2, 8), mask = zeros({2, 8});
    for (int64_t r = 0; r < 2; r++)
      for (int64_t t = 0; t < 5; t++) mask.data<float>()[r * 8 + t] = 1;
    Tensor e = m.encode(ids, mask).data();
    for (int64_t t = 0; t < 5; t++)
      for (int64_t c = 0; c < 16; c++) EXPECT_NEAR((double)e.at({0, t, c}), (double)e.at({1, t, c}), 1e-5) << "t=" << t;
  }
}

TEST(Seq2Seq, PairBlockAttendsOnlyToTheOtherSegment) {
  Seq2SeqConfig c = tiny("lightconv");
  c.kernel_sizes = {1};  // no mixing inside the convolutions: only the pair block moves information between positions
  c.pair_attention = true;
  Generator g(5);
  Seq2SeqModel with(c, g);
  NoGradGuard ng;
  Tensor ids = ids_of({5, 6, 7, 3, 8, 9, 10}, 1, 7), mask = full({1, 7}, 1.0), seg = ids_of({0, 0, 0, 1, 1, 1, 1}, 1, 7);
  Tensor other = ids.clone();
  other.data<int64_t>()[5] = 20;  // a token of segment 1
  Tensor same = ids.clone();
  same.data<int64_t>()[1] = 21;  // a token of segment 0
  Tensor e = with.encode(ids, mask, seg).data(), eo = with.encode(other, mask, seg).data(),
         es = with.encode(same, mask, seg).data();
  auto moved = [&](const Tensor& x, int64_t t) {
    double d = 0;
    for (int64_t k = 0; k < 16; k++) d = std::max(d, std::abs((double)x.at({0, t, k}) - (double)e.at({0, t, k})));
    return d;
  };
  EXPECT_GT(moved(eo, 0), 1e-6) << "segment 0 does not see segment 1";
  EXPECT_EQ(moved(es, 0), 0.0) << "segment 0 sees its own other positions";
  EXPECT_EQ(moved(es, 2), 0.0);
  EXPECT_GT(moved(es, 4), 1e-6) << "segment 1 does not see segment 0";
  EXPECT_THROW(with.encode(ids, mask), std::exception);  // segments are required
}

TEST(Seq2Seq, RefusesAMixerThatCannotBeCausal) {
  Generator g(0);
  EXPECT_THROW(Seq2SeqModel(tiny("fnet"), g), std::exception);
}
