// tests/nn/models/test_bert.cpp - the BERT of nn/models/bert.h: the batch layout (segments after the first [SEP], the
// key mask), Hugging Face's names for post-LN and pre-LN, the shapes and the refusals, the masked-LM head as written
// in the header (a hand computation from the weights, decoder tied to the word embeddings), padding that changes no
// real position, a pretraining file that loads into the classifier, and the sinusoidal position start.
#include <cmath>
#include <filesystem>

#include "nn/models/bert.h"
#include "nn/nn_test_util.h"

using namespace dl;
using namespace dl::test;
using namespace dl::nn;

namespace {

constexpr int32_t kSep = 1;

BertConfig tiny(bool norm_first = false) {
  BertConfig c;
  c.vocab = 12, c.max_len = 10, c.d_model = 8, c.layers = 2, c.heads = 2, c.dim_ff = 16, c.norm_first = norm_first;
  return c;
}

bool has(const std::map<std::string, Tensor>& sd, const std::string& name) { return sd.count(name) > 0; }

}  // namespace

TEST(Bert, BatchSegmentsFollowTheFirstSepAndPaddingIsMasked) {
  // [CLS]=3 a b [SEP] c [SEP]  and  [CLS] a [SEP]
  const BertBatch b = bert_batch({{3, 5, 6, kSep, 7, kSep}, {3, 5, kSep}}, kSep);
  ASSERT_EQ(b.B, 2);
  ASSERT_EQ(b.T, 6);
  const int64_t seg[12] = {0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0};
  const float mask[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0};
  for (int i = 0; i < 12; i++) {
    EXPECT_EQ(b.types.data<int64_t>()[i], seg[i]) << i;
    EXPECT_EQ(b.mask.data<float>()[i], mask[i]) << i;
  }
  EXPECT_EQ(b.ids.data<int64_t>()[9], 0) << "padding id 0";
  // another separator id: the same row is one segment throughout
  const BertBatch o = bert_batch({{3, 5, 6, kSep, 7, kSep}}, 99);
  for (int t = 0; t < 6; t++) EXPECT_EQ(o.types.data<int64_t>()[t], 0) << t;
}

TEST(Bert, NamesAreHuggingFacesAndPreLnAddsTheFinalNorm) {
  Generator g(1);
  BertForPreTraining post(tiny(false), g), pre(tiny(true), g);
  const auto sp = post.state_dict(), sq = pre.state_dict();
  for (const char* n : {"bert.embeddings.word_embeddings.weight", "bert.embeddings.position_embeddings.weight",
                        "bert.embeddings.token_type_embeddings.weight", "bert.embeddings.LayerNorm.weight",
                        "bert.encoder.layer.1.self_attn.in_proj_weight", "bert.encoder.layer.0.linear1.weight",
                        "bert.pooler.dense.weight", "cls.predictions.bias", "cls.predictions.transform.dense.weight",
                        "cls.predictions.transform.LayerNorm.weight", "cls.seq_relationship.weight"})
    EXPECT_TRUE(has(sp, n) && has(sq, n)) << n;
  EXPECT_FALSE(has(sp, "bert.encoder.LayerNorm.weight"));
  EXPECT_TRUE(has(sq, "bert.encoder.LayerNorm.weight"));
  EXPECT_FALSE(has(sp, "cls.predictions.decoder.weight")) << "the decoder is the word embeddings, not a copy";
}

TEST(Bert, ShapesAndRefusals) {
  Generator g(2);
  BertForPreTraining m(tiny(), g);
  const BertBatch b = bert_batch({{3, 5, 6, kSep, 7, kSep}, {3, 5, kSep}}, kSep);
  const Var h = m.bert->forward(b);
  EXPECT_EQ(h.shape(), (Shape{2, 6, 8}));
  EXPECT_EQ(m.nsp_logits(h).shape(), (Shape{2, 2}));
  EXPECT_EQ(m.mlm_logits(h, from_vector(std::vector<int64_t>{1, 7, 8}, {3})).shape(), (Shape{3, 12}));
  const std::string e = error_of([&] { m.bert->forward(bert_batch({std::vector<int32_t>(11, 5)}, kSep)); });
  EXPECT_NE(e.find("11 tokens is longer than max_len 10"), std::string::npos) << e;
  BertConfig odd = tiny();
  odd.heads = 3;
  EXPECT_NE(error_of([&] { BertModel bad(odd, g); }).find("not a multiple of heads 3"), std::string::npos);
}

// cls.predictions as the header writes it: LayerNorm(gelu(dense(h))) word^T + bias at the flat positions asked for.
TEST(Bert, MlmHeadIsTheTransformThenTheTiedDecoder) {
  Generator g(3);
  BertForPreTraining m(tiny(), g);
  m.eval();
  NoGradGuard ng;
  m.mlm_bias.mutable_data().copy_(randn_var({12}, 4, false).data());
  const BertBatch b = bert_batch({{3, 5, 6, kSep, 7, kSep}}, kSep);
  const Var h = m.bert->forward(b);
  const Tensor got = m.mlm_logits(h, from_vector(std::vector<int64_t>{4}, {1})).data().contiguous();  // position 4
  const Tensor row = narrow(reshape(h, {6, 8}), 0, 4, 1).data();
  const Tensor t = m.transform_norm->forward(gelu(m.transform_dense->forward(Var(row)))).data().contiguous();  // (1, C)
  const Tensor W = m.bert->word->weight.data().contiguous(), bias = m.mlm_bias.data().contiguous();
  for (int v = 0; v < 12; v++) {
    double want = bias.data<float>()[v];
    for (int c = 0; c < 8; c++) want += (double)t.data<float>()[c] * W.data<float>()[v * 8 + c];
    EXPECT_NEAR(got.data<float>()[v], want, 1e-5) << v;
  }
}

// The key mask: a row's real positions see only real keys, so padding it (a longer batch neighbour) changes nothing.
TEST(Bert, PaddingChangesNoRealPosition) {
  for (bool pre_ln : {false, true}) {
    Generator g(5);
    BertModel m(tiny(pre_ln), g);
    m.eval();
    NoGradGuard ng;
    const Tensor alone = m.forward(bert_batch({{3, 5, kSep}}, kSep)).data().contiguous();                       // (1, 3, C)
    const Tensor padded = m.forward(bert_batch({{3, 5, kSep}, {3, 6, 7, 8, kSep}}, kSep)).data().contiguous();  // (2, 5, C)
    for (int t = 0; t < 3; t++)
      for (int c = 0; c < 8; c++)
        EXPECT_NEAR(alone.data<float>()[t * 8 + c], padded.data<float>()[t * 8 + c], 1e-5) << pre_ln << " t " << t << " c " << c;
  }
}

TEST(Bert, APretrainingFileLoadsIntoTheClassifier) {
  Generator g(6);
  BertForPreTraining pre(tiny(), g);
  const std::string dir = std::string(DL_BINARY_DIR) + "/test_tmp/bert_load";
  std::filesystem::create_directories(dir);
  pre.save(dir + "/bert.safetensors");
  Generator g2(7);
  BertClassifier c(tiny(), 3, g2);
  LoadOptions lo;
  lo.ignore_unexpected = {"cls."}, lo.allow_missing = {"classifier."};
  c.load(dir + "/bert.safetensors", lo);
  const Tensor a = pre.bert->word->weight.data().contiguous(), b = c.bert->word->weight.data().contiguous();
  for (int64_t i = 0; i < a.numel(); i++) ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]) << i;
  EXPECT_EQ(c.forward(bert_batch({{3, 5, kSep}}, kSep)).shape(), (Shape{1, 3}));
  EXPECT_THROW(c.load(dir + "/bert.safetensors"), std::exception) << "strict: the cls.* entries are unexpected";
}

// Sinusoidal positions: PE[t, 2i] = 0.02 sqrt(2) sin(t / 10000^(2i/C)), PE[t, 2i+1] = ... cos; otherwise N(0, 0.02).
TEST(Bert, SinusoidalPositionsStartAsScaledSinusoids) {
  BertConfig c = tiny();
  c.sinusoidal_positions = true;
  Generator g(8);
  BertForPreTraining p(c, g);
  const Tensor pe = p.bert->position->weight.data().contiguous();
  const double s = 0.02 * std::sqrt(2.0);
  EXPECT_NEAR(pe.data<float>()[0], 0.0, 1e-7);  // sin(0)
  EXPECT_NEAR(pe.data<float>()[1], s, 1e-7);    // cos(0)
  EXPECT_NEAR(pe.data<float>()[3 * 8 + 2], s * std::sin(3 / std::pow(10000.0, 2.0 / 8)), 1e-7);
  EXPECT_NEAR(pe.data<float>()[3 * 8 + 5], s * std::cos(3 / std::pow(10000.0, 4.0 / 8)), 1e-7);
}
