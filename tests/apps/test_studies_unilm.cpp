// tests/apps/test_studies_unilm.cpp - `studies unilm` (apps/studies/unilm.h): the pair rewrite, the batches, the
// SimBERT property that [CLS] of "[CLS] A [SEP] B [SEP]" is A's vector alone, a learning test in which generation
// through the prefix mask learns to copy while the leaky (full) mask does not; as an experiment on the harness: a
// miniature run writing its table, the lr chosen on validation, the presets, bad settings named, the old command line
// read as before, and a sweep killed twice that resumes to the uninterrupted one's numbers, curves and table.
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

UnilmConfig tiny(const std::string& arm) {
  UnilmConfig o;
  o.arm = arm, o.lr = 1e-2, o.steps = 300, o.batch = 32, o.eval_every = 300;
  o.d_model = 32, o.layers = 2, o.heads = 2, o.mlp = 64;
  o.val_pairs = 20, o.test_pairs = 100, o.decode_pairs = 100;
  return o;
}

dl::harness::RunContext quiet_ctx(const std::string& name) {
  dl::harness::RunContext ctx;
  ctx.out = ctx.dir = dl::test::app_temp_dir(name), ctx.quiet = true;
  return ctx;
}
}  // namespace

// Generation through the prefix mask learns to copy B = A within the budget; the same training with the full mask (B
// sees its own future, so the next byte can be read instead of predicted) decodes badly once the future is gone.
TEST(StudiesUnilm, PrefixMaskLearnsToCopyAndLeakyMaskFails) {
  const UnilmData d = copy_pairs();
  UnilmRun good = train_unilm(d, tiny("gen"), quiet_ctx("unilm_copy_prefix"));
  const UnilmMask full = UnilmMask::full;
  UnilmRun leaky = train_unilm(d, tiny("gen"), quiet_ctx("unilm_copy_full"), &full);
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

namespace {

namespace harness = dl::harness;
using json = nlohmann::json;

harness::Preset load(const std::string& name_or_path) {
  const harness::Experiment e = unilm_experiment();
  return harness::load_preset(name_or_path, e.presets_dir, std::vector<harness::Axis>(e.axes.begin(), e.axes.end()));
}

// A miniature preset on the tiny Brown folder: a 1-layer encoder (d 16), 4 steps of 8 pairs (a validation point and a
// checkpoint every 2 unless `sets` say otherwise), 6 validation and 8 test pairs, 3 decoded.
harness::Preset mini_preset(const std::string& dir, const std::vector<std::string>& arms, const std::vector<std::string>& lrs,
                            const std::vector<int>& seeds) {
  json p = {{"description", "test"}, {"arms", arms}, {"lrs", lrs}, {"seeds", seeds},
            {"defaults", {{"steps", 4}, {"batch", 8}, {"eval_every", 2}, {"checkpoint_every", 2}, {"d_model", 16},
                          {"layers", 1}, {"heads", 2}, {"mlp", 32}, {"val_pairs", 6}, {"test_pairs", 8}, {"decode_pairs", 3},
                          {"data_dir", tiny_brown(dl::test::app_temp_dir("studies_unilm_brown"))}}}};
  harness::write_text_atomic(dir + "/mini.json", p.dump(2));
  return load(dir + "/mini.json");
}

}  // namespace

TEST(StudiesUnilm, MiniatureRunWritesItsTable) {
  const std::string dir = dl::test::app_temp_dir("studies_unilm");
  const harness::Experiment e = unilm_experiment();
  const harness::Preset p = mini_preset(dir, {"untrained", "joint", "con"}, {"0.01"}, {0, 1});
  harness::run_cells(e, p, harness::expand_cells(e, p, p.values, p.seeds, {}), dl::test::quiet_in(dir + "/out"));
  harness::write_reports(e, p, dir + "/out");
  const std::string md = harness::read_text(dir + "/out/unilm.md");
  EXPECT_NE(md.find("| joint | prefix | seq2seq + contrastive | 2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| untrained | prefix | none (initialisation) | 2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("Paired difference joint - con in recall@1"), std::string::npos) << md;
  EXPECT_NE(md.find("Decoded test examples"), std::string::npos) << md;
  EXPECT_NE(harness::read_text(dir + "/out/results.md").find("| joint | prefix | seq2seq + contrastive | 2 |"), std::string::npos);
  // the paired difference is joint minus con, seed by seed
  const json j = json::parse(harness::read_text(dir + "/out/unilm.json"));
  double diff = 0;
  for (int s = 0; s < 2; s++)
    diff += (j["arms"]["joint"][s]["recall1"].get<double>() - j["arms"]["con"][s]["recall1"].get<double>()) / 2;
  EXPECT_NEAR(j["paired"]["joint-con"]["recall@1"]["mean"].get<double>(), diff, 1e-12);
  EXPECT_EQ(j["arms"]["joint"][0]["curve_steps"], json::array({0, 2, 4})) << "step 0, then every eval_every";
  EXPECT_EQ(j["arms"]["untrained"][0]["curve_steps"], json::array({0}));
  EXPECT_TRUE(std::filesystem::exists(dir + "/out/plots/val_token_acc.dat"));
  UnilmDataConfig bad;
  bad.max_a = 4;
  EXPECT_NE(dl::test::error_of([&] { make_unilm_pairs(bad); }).find("max_a must be at least 8"), std::string::npos);
}

// With two lrs every arm runs at both; the report takes the lr whose joint seed-0 cell scores best on validation (the
// mean of its last token accuracy and recall@1), lists both, and reports the arms at it.
TEST(StudiesUnilm, TheReportChoosesTheLrOnValidation) {
  const std::string dir = dl::test::app_temp_dir("studies_unilm_lrs");
  const harness::Experiment e = unilm_experiment();
  const harness::Preset p = mini_preset(dir, {"joint", "gen"}, {"0.003", "0.01"}, {0});
  harness::run_cells(e, p, harness::expand_cells(e, p, p.values, p.seeds, {}), dl::test::quiet_in(dir + "/out"));
  harness::write_reports(e, p, dir + "/out");
  const json j = json::parse(harness::read_text(dir + "/out/unilm.json"));
  ASSERT_EQ(j["lr_search"].size(), 2u);
  auto score = [&](int i) { return j["lr_search"][i]["val_token_acc"].get<double>() + j["lr_search"][i]["val_recall1"].get<double>(); };
  const double chosen = score(1) > score(0) ? 0.01 : 0.003;
  const std::string md = harness::read_text(dir + "/out/unilm.md");
  EXPECT_NE(md.find("Learning rates tried"), std::string::npos) << md;
  EXPECT_NE(md.find("lr " + harness::fixed(chosen, 4) + " (warmup + cosine)"), std::string::npos) << md;
  const json cell = json::parse(harness::read_text(dir + "/out/cells/joint__" + (chosen == 0.01 ? "0.01" : "0.003") +
                                                   "__seed0/result.json"));
  EXPECT_EQ(j["arms"]["joint"][0]["token_acc"], cell["metrics"]["token_acc"]) << "the arms at the chosen lr";
}

// The presets: "default" is the command line of before the harness with no option (200 steps at lr 0.01, validation
// every 50, 50 decoded); "large" 600 steps, lrs 0.003 and 0.01, every 100, 150 decoded; the rest is shared.
TEST(StudiesUnilm, PresetsSelectTheDocumentedSettings) {
  const harness::Experiment e = unilm_experiment();
  const harness::Preset d = load("default"), l = load("large");
  EXPECT_EQ(d.values[0], (std::vector<std::string>{"untrained", "joint", "gen", "con", "gen_causal"}));
  EXPECT_EQ(d.values[1], (std::vector<std::string>{"0.01"}));
  EXPECT_EQ(l.values[1], (std::vector<std::string>{"0.003", "0.01"}));
  EXPECT_EQ(d.seeds, (std::vector<int>{0, 1, 2}));
  auto config = [&](const harness::Preset& p) {
    return harness::config_from_json<UnilmConfig>(harness::expand_cells(e, p, p.values, p.seeds, {}).back().config, p.name);
  };
  const UnilmConfig dc = config(d), lc = config(l);
  UnilmConfig plain;
  plain.arm = "gen_causal", plain.seed = 2;  // the last cell of the default sweep
  EXPECT_EQ(harness::config_to_json(dc), harness::config_to_json(plain)) << "the default preset is the struct's defaults";
  EXPECT_TRUE(lc.steps == 600 && lc.eval_every == 100 && lc.decode_pairs == 150);
  for (const UnilmConfig* o : {&dc, &lc})  // the rest is shared: model, batch, evaluation pairs
    EXPECT_TRUE(o->batch == 32 && o->d_model == 64 && o->layers == 2 && o->test_pairs == 2000 && o->val_pairs == 200 &&
                o->data().respell);
}

TEST(StudiesUnilm, RefusesBadSettingsByName) {
  const harness::Experiment e = unilm_experiment();
  const harness::Preset p = load("default");
  auto error = [&](const std::vector<std::string>& arms, const std::vector<std::string>& lrs, const std::vector<std::string>& sets) {
    return dl::test::error_of([&] { harness::expand_cells(e, p, {arms, lrs}, {0}, sets); });
  };
  EXPECT_EQ(error({"joint"}, {"0.01"}, {}), "");
  EXPECT_NE(error({"bogus"}, {"0.01"}, {}).find("unknown arm 'bogus'"), std::string::npos);
  EXPECT_NE(error({"joint"}, {"fast"}, {}).find("lr 'fast'"), std::string::npos);
  EXPECT_NE(error({"joint"}, {"0.01"}, {"heads=3"}).find("heads of even size"), std::string::npos);
  EXPECT_NE(error({"joint"}, {"0.01"}, {"pairs=\"rot\""}).find("'pairs'"), std::string::npos);
  EXPECT_NE(error({"joint"}, {"0.01"}, {"batch=1"}).find("'batch'"), std::string::npos);
  EXPECT_NE(error({"joint"}, {"0.01"}, {"lr=0.1"}).find("--lrs"), std::string::npos) << "an axis";
}

TEST(StudiesUnilm, TheOldCommandLineIsReadAsBefore) {
  using V = std::vector<std::string>;
  const LegacyFlags& f = unilm_legacy_flags();
  EXPECT_EQ(legacy_args({"--arms", "joint,gen", "--seeds", "2", "--steps", "600", "--lrs", "3e-3,1e-2", "--pairs", "normalised"}, f),
            (V{"run", "--arms", "joint,gen", "--seeds", "0-1", "--set", "steps=600", "--lrs", "3e-3,1e-2", "--set",
               "pairs=\"normalised\""}));
  EXPECT_EQ(legacy_args({"--d-model=32", "--data-dir", "/b", "--decode-pairs", "0"}, f),
            (V{"run", "--set", "d_model=32", "--set", "data_dir=\"/b\"", "--set", "decode_pairs=0"}));
}

// Killed (as a SIGKILL would, no checkpoint at the kill) inside the first cell and again inside the second, resumed
// each time: every cell's numbers and validation curve, and the table, equal the uninterrupted run's.
TEST(StudiesUnilm, AKilledSweepResumesToTheUninterruptedResultsAndTable) {
  const std::string dir = dl::test::app_temp_dir("studies_unilm_resume");
  const harness::Experiment e = unilm_experiment();
  const harness::Preset p = mini_preset(dir, {"joint", "gen", "con"}, {"0.01"}, {0});
  const std::vector<harness::Cell> cells = harness::expand_cells(e, p, p.values, p.seeds, {"steps=8", "eval_every=1"});
  // stopped at step 5 (checkpoint 4), then in the second cell
  const auto [whole, resumed] = dl::test::sweep_whole_and_resumed(e, p, cells, dir, 3);
  dl::test::expect_same_cells_and_table(whole, resumed, {"/metrics", "/curve", "/extra/curve_recall1"});
  for (const json& c : whole["cells"]) EXPECT_EQ(c["extra"]["curve_steps"].size(), 9u) << c["cell"];
}
