// tests/apps/test_studies_nsp_bert.cpp - the NSP-BERT study (apps/studies/nsp_bert.h; the BERT itself is tested in
// tests/nn/models/test_bert.cpp): sentences and documents, the NSP pair builder (half true next, a random B never from
// A's document, documents split before pairs are made), the byte encoding and its segments, the zero-shot scorer (on
// NSP logits set by hand, and through a real model whose NSP head is set by hand), a tiny pretraining that must lower
// the MLM loss and lift NSP above chance, its exact resume after a kill; as an experiment on the harness: a miniature
// run writing its tables and the head for unargmaxable, the presets, bad settings named, the old command line read as
// before, and a sweep killed twice that resumes to the uninterrupted one's numbers and tables.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "app_test_util.h"
#include "apps/common/results.h"
#include "apps/studies/cli.h"
#include "apps/studies/nsp_bert.h"
#include "tasks/tokenizer.h"

using namespace studies;

namespace {

// Documents whose sentences are unique strings "d<doc> s<i> ..." so a pair tells where its B came from.
std::vector<SentenceDoc> numbered_docs(int docs, int sentences) {
  std::vector<SentenceDoc> d(docs);
  for (int k = 0; k < docs; k++)
    for (int i = 0; i < sentences; i++) d[k].push_back("d" + std::to_string(k) + " s" + std::to_string(i) + ".");
  return d;
}
int doc_of(const std::string& s) { return std::stoi(s.substr(1, s.find(' ') - 1)); }

// A corpus where coherence is visible: document k writes words of two letters only (its "topic": letters 2 (k % 6) and
// 2 (k % 6) + 1), so a B from another document almost always uses other letters, and words repeat within a sentence
// (something for the MLM to learn).
std::vector<SentenceDoc> two_letter_docs(int docs, int sentences, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<SentenceDoc> d(docs);
  for (int k = 0; k < docs; k++) {
    const char a = (char)('a' + 2 * (k % 6)), b = (char)(a + 1);
    for (int i = 0; i < sentences; i++) {
      std::string word;
      for (int c = 0; c < 3; c++) word += (rng() & 1) ? a : b;
      d[k].push_back(word + " " + word + " " + word + ".");
    }
  }
  return d;
}

PretrainOptions tiny_options() {
  PretrainOptions o;
  o.bert.d_model = 32, o.bert.layers = 1, o.bert.heads = 2, o.bert.dim_ff = 64, o.bert.max_len = 35;
  o.max_a = 16, o.max_b = 16, o.batch = 32, o.lr = 3e-3, o.val_pairs = 200;
  return o;
}

}  // namespace

TEST(StudiesNspBert, SplitsSentencesAndDocuments) {
  EXPECT_EQ(split_sentences("Mr. Smith went home. He slept!  Did he? \"Yes.\" The U.S. Army won 3.5 games.\nAn end"),
            (std::vector<std::string>{"Mr. Smith went home.", "He slept!", "Did he?", "\"Yes.\"", "The U.S. Army won 3.5 games.",
                                      "An end"}));
  // a line break after a full stop ends a sentence, one inside a sentence (verse, wrapping) is a space
  EXPECT_EQ(split_sentences("A line that\nwraps. next one"), (std::vector<std::string>{"A line that wraps. next one"}));
  EXPECT_EQ(split_sentences("First.\nsecond"), (std::vector<std::string>{"First.", "second"}));
  const std::vector<SentenceDoc> docs = sentence_documents("One. Two.\nThree.\n\n\nFour? Five.\n  \nSix.");
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[0], (SentenceDoc{"One.", "Two.", "Three."}));
  EXPECT_EQ(docs[1], (SentenceDoc{"Four?", "Five."}));
  EXPECT_EQ(docs[2], (SentenceDoc{"Six."}));
}

TEST(StudiesNspBert, PairsAreHalfTrueNextAndTheRandomOneIsFromAnotherDocument) {
  const std::vector<SentenceDoc> docs = numbered_docs(30, 12);
  const std::vector<NspPair> pairs = make_nsp_pairs(docs, 5);
  ASSERT_EQ(pairs.size(), 30u * 11u);  // one per sentence with a successor
  int next = 0;
  for (const NspPair& p : pairs) {
    EXPECT_EQ(p.a, docs[p.doc][p.index]);
    if (p.label == 0) {
      next++;
      EXPECT_EQ(p.b, docs[p.doc][p.index + 1]);
    } else {
      EXPECT_NE(doc_of(p.b), p.doc) << "a NotNext B must come from another document: " << p.a << " / " << p.b;
    }
  }
  EXPECT_NEAR((double)next / pairs.size(), 0.5, 0.06) << next << " of " << pairs.size();  // binomial SE 0.028
  // the same seed gives the same pairs; another seed other ones
  EXPECT_EQ(make_nsp_pairs(docs, 5)[7].b, pairs[7].b);
  int differ = 0;
  const std::vector<NspPair> other = make_nsp_pairs(docs, 6);
  for (size_t i = 0; i < pairs.size(); i++) differ += other[i].b != pairs[i].b;
  EXPECT_GT(differ, 50);
  EXPECT_THROW(make_nsp_pairs(numbered_docs(1, 5), 0), dl::tasks::DataError);

  // split by document: the two sides share no document, and together hold all of them
  auto [train, val] = split_documents(docs, 0.2, 3);
  EXPECT_EQ(val.size(), 6u);
  EXPECT_EQ(train.size() + val.size(), docs.size());
  std::set<int> seen;
  for (auto& d : train) seen.insert(doc_of(d[0]));
  for (auto& d : val) EXPECT_FALSE(seen.count(doc_of(d[0]))) << "document " << doc_of(d[0]) << " is on both sides";
  for (const NspPair& p : make_nsp_pairs(val, 1)) EXPECT_FALSE(seen.count(doc_of(p.b))) << "a validation B from training";
}

TEST(StudiesNspBert, EncodesClsASepBSepWithSegments) {
  const int32_t o = dl::tasks::ByteTokenizer::byte_offset;
  // A keeps its end ("llo"), B its start ("worl")
  const std::vector<int32_t> ids = encode_pair("hello", "world", 3, 4);
  EXPECT_EQ(ids, (std::vector<int32_t>{3, 'l' + o, 'l' + o, 'o' + o, 1, 'w' + o, 'o' + o, 'r' + o, 'l' + o, 1}));
  BertBatch b = bert_batch({ids, encode_single("hi", 8)});
  ASSERT_EQ(b.T, 10);
  const std::vector<int64_t> seg0 = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
  for (int t = 0; t < 10; t++) EXPECT_EQ(b.types.data<int64_t>()[t], seg0[t]) << t;
  for (int t = 0; t < 10; t++) EXPECT_EQ(b.mask.data<float>()[10 + t], t < 4 ? 1.f : 0.f) << t;  // [CLS] h i [SEP] pad...
  EXPECT_EQ(b.ids.data<int64_t>()[10 + 3], 1);
}

TEST(StudiesNspBert, ZeroShotPicksThePromptWithTheHighestPIsNext) {
  // NSP logits by hand: (l0, l1) with P(IsNext) = softmax[0]. A prompt that shares a word with the text is "next".
  NspLogitsFn by_hand = [](const std::vector<std::pair<std::string, std::string>>& pairs) {
    std::vector<std::array<double, 2>> out;
    for (auto& [a, b] : pairs) {
      const bool shares = (a.find("good") != std::string::npos && b.find("good") != std::string::npos) ||
                          (a.find("bad") != std::string::npos && b.find("bad") != std::string::npos);
      out.push_back({shares ? 1.0 : 0.0, b.find("It") == 0 ? 0.5 : 0.0});  // "It ..." prompts lean NotNext
    }
    return out;
  };
  const std::vector<std::vector<std::string>> templates = {{"It was bad.", "Bad."}, {"It was good.", "Good."}};
  const PromptScores p = score_prompts({"a good film", "a bad film", "a film"}, templates, by_hand);
  ASSERT_EQ(p.size(), 3u);
  ASSERT_EQ(p[0].size(), 2u);
  ASSERT_EQ(p[0][1].size(), 2u);
  EXPECT_NEAR(p[0][1][0], 1 / (1 + std::exp(0.5 - 1.0)), 1e-12);  // softmax([1, 0.5])[0]
  EXPECT_NEAR(p[0][0][1], 0.5, 1e-12);
  EXPECT_EQ(zero_shot_label(p[0]), 1);
  EXPECT_EQ(zero_shot_label(p[1]), 0);
  EXPECT_DOUBLE_EQ(zero_shot_accuracy(p, {1, 0, 0}), 1.0);  // "a film": every score ties, the first label wins
  // one template alone, and the mean over templates, can disagree
  const std::vector<std::vector<double>> s = {{0.9, 0.1}, {0.6, 0.6}};
  EXPECT_EQ(zero_shot_label(s, 0), 0);
  EXPECT_EQ(zero_shot_label(s, 1), 1);
  EXPECT_EQ(zero_shot_label(s), 1);  // means 0.5 vs 0.6
  EXPECT_DOUBLE_EQ(zero_shot_accuracy(p, {0, 1, 1}), 0.0);

  // through a real model: with seq_relationship's weight 0 and bias (2, -1) every pair's P(IsNext) is sigmoid(3)
  dl::Generator g(1);
  BertForPreTraining m(tiny_options().bert, g);
  m.seq_relationship->weight.mutable_data().zero_();
  m.seq_relationship->bias.mutable_data().data<float>()[0] = 2, m.seq_relationship->bias.mutable_data().data<float>()[1] = -1;
  const PromptScores q = score_prompts({"x", "y y"}, templates, model_nsp_logits(m, 16, 16, 3));
  for (auto& e : q)
    for (auto& l : e)
      for (double v : l) EXPECT_NEAR(v, 1 / (1 + std::exp(-3.0)), 1e-6);
}

TEST(StudiesNspBert, PretrainingLowersMlmLossAndLiftsNspAboveChance) {
  const std::vector<SentenceDoc> docs = two_letter_docs(36, 16, 1);
  const std::vector<SentenceDoc> train(docs.begin(), docs.begin() + 30), val(docs.begin() + 30, docs.end());
  PretrainOptions o = tiny_options();
  o.steps = 500, o.bert.layers = 2;
  dl::harness::RunContext ctx;
  ctx.out = ctx.dir = dl::test::app_temp_dir("nsp_bert_learn"), ctx.quiet = true;
  dl::Generator g(o.seed);
  BertForPreTraining m(o.bert, g);
  nlohmann::json info;
  pretrain_bert(m, g, train, val, o, ctx, info);
  const double nsp0 = info["before"]["nsp_accuracy"], nsp1 = info["after"]["nsp_accuracy"];
  const double mlm0 = info["before"]["mlm_loss"], mlm1 = info["after"]["mlm_loss"];
  EXPECT_LT(mlm1, mlm0 - 1.5) << "MLM loss " << mlm0 << " -> " << mlm1;
  EXPECT_GT(info["after"]["mlm_accuracy"].get<double>(), info["after"]["mlm_majority"].get<double>() + 0.1);
  EXPECT_GT(nsp1, 0.8) << "NSP accuracy " << nsp0 << " -> " << nsp1 << " on " << info["after"]["pairs"] << " held-out pairs";
  EXPECT_LT(nsp0, 0.62);
}

TEST(StudiesNspBert, AKilledPretrainingResumesExactly) {
  const std::vector<SentenceDoc> docs = two_letter_docs(12, 8, 2);
  const std::vector<SentenceDoc> train(docs.begin(), docs.begin() + 9), val(docs.begin() + 9, docs.end());
  PretrainOptions o = tiny_options();
  o.steps = 20, o.val_pairs = 20, o.bert.dropout = 0.1;  // dropout: the generator's state must resume too
  const std::string dir = dl::test::app_temp_dir("nsp_bert_resume");
  auto run = [&](const std::string& sub, bool resume, int stop_after) {
    dl::harness::RunContext ctx;
    ctx.out = ctx.dir = dir + "/" + sub, ctx.quiet = true, ctx.resume = resume, ctx.stop_after = stop_after;
    dl::Generator g(o.seed);
    BertForPreTraining m(o.bert, g);
    nlohmann::json info;
    pretrain_bert(m, g, train, val, o, ctx, info);
    m.save(ctx.dir + "/bert.safetensors");
  };
  run("whole", false, -1);
  EXPECT_THROW(run("part", false, 10), dl::harness::Interrupted);
  run("part", true, -1);
  dl::test::expect_identical_weights(dir + "/whole/bert.safetensors", dir + "/part/bert.safetensors");
}

// ---- the study on the harness -------------------------------------------------------------------------------------
namespace {

namespace harness = dl::harness;
using json = nlohmann::json;

harness::Preset load(const std::string& name_or_path) {
  const harness::Experiment e = nsp_bert_experiment();
  return harness::load_preset(name_or_path, e.presets_dir, std::vector<harness::Axis>(e.axes.begin(), e.axes.end()));
}

// A miniature preset: the tiny BERT pretrained `steps` steps (cached in <dir>/cache), sentiment only, budget 4,
// `finetune_steps` fine-tuning steps (a checkpoint every 2), 20 validation and test texts, seed 0.
harness::Preset mini_preset(const std::string& dir, int steps, int finetune_steps) {
  json p = {{"description", "test"}, {"tasks", {"sentiment"}}, {"arms", {"zero-shot", "pretrained", "scratch"}}, {"seeds", {0}},
            {"defaults", {{"d_model", 32}, {"layers", 1}, {"heads", 2}, {"dim_ff", 64}, {"max_a", 16}, {"max_b", 16},
                          {"batch", 32}, {"lr", 3e-3}, {"steps", steps}, {"val_pairs", 40}, {"budgets", "4"},
                          {"finetune_steps", finetune_steps}, {"checkpoint_every", 2}, {"max_eval", 20},
                          {"cache", dir + "/cache"}}}};
  harness::write_text_atomic(dir + "/mini.json", p.dump(2));
  return load(dir + "/mini.json");
}

}  // namespace

TEST(StudiesNspBert, AMiniatureRunWritesItsTablesAndAHeadForUnargmaxable) {
  const std::string dir = dl::test::app_temp_dir("nsp_bert_run");
  const harness::Experiment e = nsp_bert_experiment();
  const harness::Preset p = mini_preset(dir, 3, 2);
  const std::vector<harness::Cell> cells = harness::expand_cells(e, p, p.values, p.seeds, {});
  ASSERT_EQ(cells.size(), 3u);
  harness::run_cells(e, p, cells, dl::test::quiet_in(dir + "/out"));
  harness::write_reports(e, p, dir + "/out");
  const std::string md = dl::harness::read_text(dir + "/out/nsp_bert.md");
  EXPECT_NE(md.find("| NSP accuracy (%) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| sentiment | chance (1 / 2) | 0 | 50.0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| sentiment | zero-shot NSP, mean over templates | 0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| sentiment | fine-tune, pretrained | 4 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| sentiment | fine-tune, from scratch | 4 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| sentiment | It was terrible. / It was great. |"), std::string::npos) << md;
  EXPECT_NE(md.find("Zero-shot label wins on test: negative "), std::string::npos) << md;
  EXPECT_NE(dl::harness::read_text(dir + "/out/results.md").find("| NSP accuracy (%) |"), std::string::npos);
  const json j = json::parse(dl::harness::read_text(dir + "/out/nsp_bert.json"));
  EXPECT_EQ(j["tasks"]["sentiment"]["finetune"].size(), 2u);
  EXPECT_EQ(j["tasks"]["sentiment"]["zero_shot"]["per_template_test"].size(), 3u);
  EXPECT_TRUE(std::filesystem::exists(dir + "/out/plots/accuracy_vs_labels_sentiment.dat"));
  EXPECT_FALSE(std::filesystem::exists(harness::cell_dir(dir + "/out", cells[1]) + "/finetune_4"))
      << "a finished cell's checkpoints are removed";
  // the MLM head unargmaxable reads: the tied decoder (the word embeddings) and its bias
  dl::TensorFile f = dl::load_safetensors(dir + "/out/nsp_bert_pretrained.safetensors");
  EXPECT_EQ(f.at("bert.embeddings.word_embeddings.weight").shape(), (dl::Shape{261, 32}));
  EXPECT_EQ(f.at("cls.predictions.bias").shape(), (dl::Shape{261}));
  EXPECT_EQ(f.at("cls.seq_relationship.weight").shape(), (dl::Shape{2, 32}));
  // a second run reads the cached model instead of pretraining again
  const NspBertConfig o = harness::config_from_json<NspBertConfig>(cells[0].config, "test");
  const std::string cached = dir + "/cache/" + pretrain_key(o.pretrain()) + "/bert.safetensors";
  const auto stamp = std::filesystem::last_write_time(cached);
  harness::run_cells(e, p, {cells[0]}, dl::test::quiet_in(dir + "/again"));
  EXPECT_EQ(stamp, std::filesystem::last_write_time(cached));
}

// The presets: "default" is the command line of before the harness with no option (400 pretraining steps, 50
// fine-tuning steps, 300 texts); "large" the docs' large tables (1500, 150, 600); the rest is shared, and the two
// pretrained models are cached apart.
TEST(StudiesNspBert, PresetsSelectTheDocumentedSettings) {
  const harness::Experiment e = nsp_bert_experiment();
  auto config = [&](const std::string& preset) {
    const harness::Preset p = load(preset);
    const std::vector<harness::Cell> cells = harness::expand_cells(e, p, p.values, p.seeds, {});
    EXPECT_EQ(cells.size(), 2u * 3 * 3) << preset << ": tasks x arms x seeds";
    return harness::config_from_json<NspBertConfig>(cells.front().config, preset);
  };
  const NspBertConfig d = config("default"), l = config("large"), plain;
  EXPECT_TRUE(d.steps == 400 && d.finetune_steps == 50 && d.max_eval == 300);
  EXPECT_TRUE(l.steps == 1500 && l.finetune_steps == 150 && l.max_eval == 600);
  EXPECT_EQ(harness::config_to_json(d), harness::config_to_json(plain)) << "the default preset is the struct's defaults";
  for (const NspBertConfig* o : {&d, &l})  // the rest is shared: the model, the budgets
    EXPECT_TRUE(o->budget_list() == (std::vector<int>{16, 64, 0}) && o->layers == 2 && o->d_model == 128 && o->batch == 32 &&
                o->finetune_batch == 16 && o->pretrain().bert.max_len == 131);
  EXPECT_NE(pretrain_key(d.pretrain()), pretrain_key(l.pretrain()));  // two cached models, not one overwritten
}

TEST(StudiesNspBert, RefusesBadSettingsByName) {
  const harness::Experiment e = nsp_bert_experiment();
  const harness::Preset p = load("default");
  auto error = [&](const std::vector<std::string>& sets) {
    return dl::test::error_of([&] { harness::expand_cells(e, p, {{"sentiment"}, {"pretrained"}}, {0}, sets); });
  };
  EXPECT_EQ(error({}), "");
  EXPECT_NE(error({"heads=3"}).find("not a multiple of 3 heads"), std::string::npos);
  EXPECT_NE(error({"budgets=\"16,x\""}).find("'budgets'"), std::string::npos);
  EXPECT_NE(error({"finetune_steps=0"}).find("'finetune_steps'"), std::string::npos);
  EXPECT_NE(error({"dropout=0.95"}).find("'dropout'"), std::string::npos);
  EXPECT_NE(error({"arm=scratch"}).find("--arms"), std::string::npos) << "an axis";
  EXPECT_NE(error({"max_len=10"}).find("unknown field 'max_len'"), std::string::npos);
  EXPECT_THROW(zero_shot_task("weather", NspBertConfig{}), std::invalid_argument);
}

TEST(StudiesNspBert, TheOldCommandLineIsReadAsBefore) {
  using V = std::vector<std::string>;
  const LegacyFlags& f = nsp_bert_legacy_flags();
  EXPECT_EQ(legacy_args({"--steps", "1500", "--seeds", "3", "--pre-ln", "--budgets", "16,all", "--seed=2", "--ff", "256"}, f),
            (V{"run", "--set", "steps=1500", "--seeds", "0-2", "--set", "pre_ln=true", "--set", "budgets=\"16,all\"", "--set",
               "pretrain_seed=2", "--set", "dim_ff=256"}));
  EXPECT_EQ(legacy_args({"--tasks", "topic", "--preset", "large", "--cache", "/tmp/c"}, f),
            (V{"run", "--tasks", "topic", "--preset", "large", "--set", "cache=\"/tmp/c\""}));
  EXPECT_EQ(legacy_args({}, f), (V{"run"})) << "no option: the default preset";
}

// Killed (as a SIGKILL would, no checkpoint at the kill) inside the shared pretraining and again inside a fine-tune,
// resumed each time: the pretrained model, every cell's numbers and the tables equal the uninterrupted run's.
TEST(StudiesNspBert, AKilledSweepResumesToTheUninterruptedResultsAndTables) {
  const std::string dir = dl::test::app_temp_dir("nsp_bert_sweep_resume");
  const harness::Experiment e = nsp_bert_experiment();
  const harness::Preset p = mini_preset(dir, 8, 8);  // pretraining: a checkpoint every step; fine-tunes: every 2
  auto cells_in = [&](const std::string& cache) {
    // dropout in the pretraining (and the classifier's 0.1): the generators' states must resume too
    return harness::expand_cells(e, p, p.values, p.seeds, {"cache=\"" + dir + "/" + cache + "\"", "dropout=0.1"});
  };
  harness::run_cells(e, p, cells_in("cache_whole"), dl::test::quiet_in(dir + "/whole"));
  harness::write_reports(e, p, dir + "/whole");
  // stopped at pretraining step 5; resumed, the pretraining ends and the pretrained arm's fine-tune stops at step 5
  // (its checkpoint at 4); resumed to the end
  dl::test::run_sweep_stopped_twice(e, p, cells_in("cache_part"), dir + "/part");
  harness::write_reports(e, p, dir + "/part");
  const NspBertConfig o = harness::config_from_json<NspBertConfig>(cells_in("x")[0].config, "test");
  dl::test::expect_identical_weights(dir + "/cache_whole/" + pretrain_key(o.pretrain()) + "/bert.safetensors",
                                     dir + "/cache_part/" + pretrain_key(o.pretrain()) + "/bert.safetensors");
  const json whole = json::parse(harness::read_text(dir + "/whole/results.json"));
  const json resumed = json::parse(harness::read_text(dir + "/part/results.json"));
  ASSERT_EQ(whole["cells"].size(), 3u);
  ASSERT_EQ(resumed["cells"].size(), 3u);
  for (size_t i = 0; i < 3; i++) {
    SCOPED_TRACE(whole["cells"][i]["cell"].get<std::string>());
    EXPECT_EQ(whole["cells"][i]["metrics"], resumed["cells"][i]["metrics"]);  // a fine-tune's loss_4 too
  }
  const json jw = json::parse(harness::read_text(dir + "/whole/nsp_bert.json"));
  const json jp = json::parse(harness::read_text(dir + "/part/nsp_bert.json"));
  for (const char* t : {"table", "templates_table", "pretraining_table"}) EXPECT_EQ(jw[t], jp[t]) << t;
  EXPECT_EQ(jw["pretraining"]["curve"], jp["pretraining"]["curve"]);
}
