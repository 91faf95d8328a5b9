// tests/apps/test_studies_unilm.cpp - `studies unilm` (apps/studies/unilm.h): the pair rewrite, the batches, the
// SimBERT property that [CLS] of "[CLS] A [SEP] B [SEP]" is A's vector alone, a learning test in which generation
// through the prefix mask learns to copy while the leaky (full) mask does not, and a miniature run writing its table.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "app_test_util.h"
#include "apps/common/results.h"
#include "apps/studies/cli.h"
#include "apps/studies/unilm.h"
#include "autograd/ops.h"
#include "tolerance.h"

using namespace studies;
using namespace dl;

TEST(StudiesUnilm, PairRewriteAndLevenshtein) {
  EXPECT_EQ(paraphrase_like("The Fulton County Grand Jury said Friday an"), "fulton county grand jury said friday");
  EXPECT_EQ(paraphrase_like("The Fulton County Grand Jury said Friday an", true), "shygba pbhagl tenaq whel fnvq sevqnl");
  EXPECT_EQ(paraphrase_like("A well-known, \"odd\" case: it's 42."), "wellknown odd case it's 42");
  EXPECT_EQ(paraphrase_like("The a an."), "");
  EXPECT_EQ(levenshtein("kitten", "sitting"), 3);
  EXPECT_EQ(levenshtein("", "abc"), 3);
  EXPECT_EQ(levenshtein("same", "same"), 0);
}

TEST(StudiesUnilm, PairBatchLayoutAndPrefix) {
  UnilmPair p{"ab", "xyz", "d"};
  UnilmBatch b = pair_batch({&p}, UnilmMask::prefix);
  // [CLS] a b [SEP] x y z [SEP]: T = 8, prefix 4; targets at positions 3..6 are x y z [SEP]
  ASSERT_EQ(b.tok.shape(), (Shape{1, 8}));
  EXPECT_EQ(b.prefix.data<int64_t>()[0], 4);
  const int64_t want_tok[8] = {3, 'a' + 5, 'b' + 5, 1, 'x' + 5, 'y' + 5, 'z' + 5, 1};
  const int64_t want_tgt[8] = {-100, -100, -100, 'x' + 5, 'y' + 5, 'z' + 5, 1, -100};
  const int64_t want_seg[8] = {0, 0, 0, 0, 1, 1, 1, 1};
  for (int t = 0; t < 8; t++) {
    EXPECT_EQ(b.tok.data<int64_t>()[t], want_tok[t]) << t;
    EXPECT_EQ(b.target.data<int64_t>()[t], want_tgt[t]) << t;
    EXPECT_EQ(b.seg.data<int64_t>()[t], want_seg[t]) << t;
  }
  EXPECT_EQ(pair_batch({&p}, UnilmMask::causal).prefix.data<int64_t>()[0], 0);
  EXPECT_EQ(pair_batch({&p}, UnilmMask::full).prefix.data<int64_t>()[0], 8);
}

// SimBERT's retrieval vector: under the prefix mask [CLS] of the pair sequence sees A only, so it equals A encoded alone.
TEST(StudiesUnilm, ClsOfPairIsSentenceVectorOfAAlone) {
  Generator g(1);
  UnilmModelOptions mo;
  mo.d_model = 16, mo.layers = 2, mo.heads = 2, mo.mlp = 32;
  UnilmModel m(mo, g);
  m.eval();
  UnilmPair p1{"hello there", "uryyb gurer", "d"}, p2{"abc", "a much longer b side", "d"};
  UnilmBatch pb = pair_batch({&p1, &p2}, UnilmMask::prefix);
  UnilmBatch sb = single_batch({&p1.a, &p2.a});
  Tensor u = m.sentence_vector(m.forward(pb.tok, pb.seg, pb.key_mask, pb.prefix)).data();
  Tensor v = m.sentence_vector(m.forward(sb.tok, sb.seg, sb.key_mask, sb.prefix)).data();
  EXPECT_TRUE(dl::test::all_close(u, v, dl::test::kAgreeF32, "[CLS] of pair vs A alone"));
  // the causal mask would give [CLS] nothing but itself: a different vector
  UnilmBatch cb = pair_batch({&p1, &p2}, UnilmMask::causal);
  Tensor c = m.sentence_vector(m.forward(cb.tok, cb.seg, cb.key_mask, cb.prefix)).data();
  EXPECT_FALSE(dl::test::all_close(c, v, dl::test::kAgreeF32, "causal [CLS] vs A alone"));
}

namespace {

// B = A: random strings of 3..6 letters over "abcdefgh".
UnilmData copy_pairs() {
  std::mt19937_64 rng(5);
  auto make = [&](int n) {
    std::vector<UnilmPair> v;
    for (int i = 0; i < n; i++) {
      std::string a;
      const int len = 3 + (int)(rng() % 4);
      for (int k = 0; k < len; k++) a += (char)('a' + rng() % 8);
      v.push_back({a, a, "toy"});
    }
    return v;
  };
  UnilmData d;
  d.train = make(2000), d.val = make(20), d.test = make(100);
  return d;
}

UnilmOptions tiny() {
  UnilmOptions o;
  o.steps = 300, o.batch = 32, o.eval_every = 0, o.lrs = {1e-2};
  o.model.d_model = 32, o.model.layers = 2, o.model.heads = 2, o.model.mlp = 64;
  o.val_pairs = 20, o.test_pairs = 100, o.decode_pairs = 100;
  return o;
}

}  // namespace

// Generation through the prefix mask learns to copy B = A within the budget; the same training with the full mask (B
// sees its own future, so the next byte can be read instead of predicted) decodes badly once the future is gone.
TEST(StudiesUnilm, PrefixMaskLearnsToCopyAndLeakyMaskFails) {
  const UnilmData d = copy_pairs();
  const UnilmOptions o = tiny();
  UnilmRun good = train_unilm(d, "gen", o.lrs[0], 0, o);
  const UnilmMask full = UnilmMask::full;
  UnilmRun leaky = train_unilm(d, "gen", o.lrs[0], 0, o, &full);
  EXPECT_GT(good.test.char_acc, 0.9) << "prefix mask: greedy char accuracy on held-out copies";
  EXPECT_GT(good.test.exact, 0.8) << "prefix mask: exact copies";
  EXPECT_LT(leaky.test.char_acc, 0.5) << "full mask: trained on its own future, it cannot decode";
}

namespace {

// A Brown-format folder (NLTK tagged, one sentence a line, paragraphs split by blank lines) of 10 small documents.
std::string tiny_brown(const std::string& dir) {
  const char* words[] = {"The", "jury", "said", "a", "city", "election", "was", "conducted", "in", "an", "honest", "way"};
  std::mt19937_64 rng(3);
  for (int f = 1; f <= 10; f++) {
    std::ofstream out(dir + "/ca" + (f < 10 ? "0" : "") + std::to_string(f));
    for (int s = 0; s < 12; s++) {
      const int n = 4 + (int)(rng() % 5);
      for (int k = 0; k < n; k++) out << words[rng() % 12] << "/nn ";
      out << "./.\n";
      if (s % 4 == 3) out << "\n";
    }
  }
  return dir;
}

}  // namespace

TEST(StudiesUnilm, MiniatureRunWritesItsTable) {
  UnilmOptions o;
  o.out = dl::test::app_temp_dir("studies_unilm");
  o.data.data_dir = tiny_brown(dl::test::app_temp_dir("studies_unilm_brown"));
  o.arms = {"untrained", "joint", "con"};
  o.seeds = 2, o.steps = 4, o.batch = 8, o.eval_every = 2;
  o.model.d_model = 16, o.model.layers = 1, o.model.heads = 2, o.model.mlp = 32;
  o.val_pairs = 6, o.test_pairs = 8, o.decode_pairs = 3;
  run_unilm(o);
  const std::string md = dl::harness::read_text(o.out + "/unilm.md");
  EXPECT_NE(md.find("| joint | prefix | seq2seq + contrastive | 2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| untrained | prefix | none (initialisation) | 2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("Paired difference joint - con in recall@1"), std::string::npos) << md;
  EXPECT_NE(md.find("Decoded test examples"), std::string::npos) << md;
  ASSERT_TRUE(std::filesystem::exists(o.out + "/unilm.json"));
  // the paired difference is joint minus con, seed by seed
  const nlohmann::json j = nlohmann::json::parse(dl::harness::read_text(o.out + "/unilm.json"));
  double diff = 0;
  for (int s = 0; s < 2; s++)
    diff += (j["arms"]["joint"][s]["recall1"].get<double>() - j["arms"]["con"][s]["recall1"].get<double>()) / 2;
  EXPECT_NEAR(j["paired"]["joint-con"]["recall@1"]["mean"].get<double>(), diff, 1e-12);
  EXPECT_TRUE(std::filesystem::exists(o.out + "/plots/val_token_acc.dat"));
  o.arms = {"joint", "bogus"};
  EXPECT_NE(dl::test::error_of([&] { run_unilm(o); }).find("unknown arm 'bogus'"), std::string::npos);
  UnilmDataConfig bad;
  bad.max_a = 4;
  EXPECT_NE(dl::test::error_of([&] { make_unilm_pairs(bad); }).find("max_a must be at least 8"), std::string::npos);
}

// The two settings of --preset: "default" is the struct's defaults (a few minutes); "large" is the setting of the docs'
// large tables. An unknown preset names the choices, from the function and through the subcommand.
TEST(StudiesUnilm, PresetsSelectTheDocumentedSettings) {
  const UnilmOptions d = unilm_preset("default"), l = unilm_preset("large"), plain;
  EXPECT_TRUE(d.steps == 200 && d.eval_every == 50 && d.decode_pairs == 50);
  EXPECT_EQ(d.lrs, (std::vector<double>{1e-2}));
  EXPECT_TRUE(l.steps == 600 && l.eval_every == 100 && l.decode_pairs == 150);
  EXPECT_EQ(l.lrs, (std::vector<double>{3e-3, 1e-2}));
  EXPECT_TRUE(plain.steps == d.steps && plain.eval_every == d.eval_every && plain.lrs == d.lrs &&
              plain.decode_pairs == d.decode_pairs);
  for (const UnilmOptions* o : {&d, &l})  // the rest is shared: arms, seeds, model, evaluation pairs
    EXPECT_TRUE(o->arms.size() == 5 && o->seeds == 3 && o->batch == 32 && o->model.d_model == 64 &&
                o->model.layers == 2 && o->test_pairs == 2000 && o->val_pairs == 200 && o->data.respell);
  const std::string e = dl::test::error_of([] { unilm_preset("huge"); });
  for (const char* word : {"--preset", "'huge'", "default, large"}) EXPECT_NE(e.find(word), std::string::npos) << e;
  CLI::App app;
  add_unilm_command(app);
  EXPECT_NE(dl::test::error_of([&] { app.parse("unilm --preset huge", false); }).find("not one of default, large"),
            std::string::npos);
}
