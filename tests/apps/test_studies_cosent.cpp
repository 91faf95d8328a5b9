// tests/apps/test_studies_cosent.cpp - `studies cosent` (apps/studies/cosent.h): Spearman's rho with ties against a
// hand-computed case, the pair sets' document split, a learning test (CoSENT orders an easy synthetic pair task in a
// fixed budget, an lr of ~0 does not); as an experiment on the harness: the presets hold the documented settings, bad
// settings are named, the old command line is read as before, a miniature run writes its tables (the selection seed's
// cell is the chosen lr's own run), and a run killed twice resumes to the uninterrupted one's results and tables.
// CoSENT's own value and gradient are tested in tests/nn/test_losses.cpp (PyTorch fixture, finite differences, right
// vs wrong ordering): not repeated here.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "app_test_util.h"
#include "apps/common/results.h"
#include "apps/studies/cli.h"
#include "apps/studies/cosent.h"

using namespace studies;
namespace harness = dl::harness;
using json = nlohmann::json;

TEST(StudiesCosent, SpearmanAveragesTiedRanks) {
  EXPECT_EQ(average_ranks({10, 20, 20, 30}), (std::vector<double>{1, 2.5, 2.5, 4}));
  EXPECT_EQ(average_ranks({3, 1, 3, 3}), (std::vector<double>{3, 1, 3, 3}));
  // By hand: ranks x = 1 2 3 4, ranks y = 1.5 1.5 3.5 3.5; about the mean rank 2.5: dx = -1.5 -0.5 0.5 1.5,
  // dy = -1 -1 1 1; rho = sum dx dy / sqrt(sum dx^2 sum dy^2) = 4 / sqrt(5 * 4) = 0.894427. Ordinal ranks for the
  // ties would give 1, and the no-ties shortcut 1 - 6 sum d^2 / (n (n^2 - 1)) would give 0.9.
  EXPECT_NEAR(spearman({1, 2, 3, 4}, {0, 0, 1, 1}), 4 / std::sqrt(20.0), 1e-12);
  EXPECT_NEAR(spearman({0.3, 0.1, 0.9, 0.5, 0.7}, {2, 1, 5, 3, 4}), 1.0, 1e-12);  // monotone, not linear
  EXPECT_NEAR(spearman({1, 2, 3}, {3, 2, 1}), -1.0, 1e-12);
  EXPECT_EQ(spearman({1, 2, 3}, {7, 7, 7}), 0.0);  // a constant side has no ranking
  EXPECT_THROW(spearman({1, 2}, {1, 2, 3}), std::invalid_argument);
  EXPECT_THROW(spearman({1}, {1}), std::invalid_argument);
}

namespace {
std::string doc_of(const std::string& id) { return id.substr(0, id.find('@')); }
}  // namespace

TEST(StudiesCosent, PairSetsAreSplitByDocument) {
  PairTaskConfig c;
  c.val_pairs = 60, c.test_pairs = 90;
  for (const char* name : {"brown", "sentiment"}) {
    PairTask t = make_pair_task(name, c);
    std::set<std::string> train_docs, train_texts;
    for (size_t i = 0; i < t.train.texts.size(); i++)
      train_docs.insert(doc_of(t.train.ids[i])), train_texts.insert(t.train.texts[i]);
    for (const PairSplit* s : {&t.val, &t.test})
      for (size_t i = 0; i < s->texts.size(); i++) {
        ASSERT_EQ(train_docs.count(doc_of(s->ids[i])), 0u) << name << ": " << s->ids[i] << " is in train and held out";
        ASSERT_EQ(train_texts.count(s->texts[i]), 0u) << name << ": a held-out text was trained on: " << s->texts[i];
      }
    std::vector<int> per_grade(t.grades, 0);
    for (const TextPair& p : t.test_pairs) {
      ASSERT_NE(p.a, p.b);
      ASSERT_EQ(p.grade, pair_grade(t.test, t.grades, p.a, p.b));
      per_grade[p.grade]++;
    }
    for (int g = 0; g < t.grades; g++) EXPECT_EQ(per_grade[g], 90 / t.grades) << name << " grade " << g;
  }
  // brown's grade 2 is "the same document" and grade 1 "the same fine genre, another document"
  PairTask b = make_pair_task("brown", c);
  for (const TextPair& p : b.val_pairs) {
    const bool same_doc = doc_of(b.val.ids[p.a]) == doc_of(b.val.ids[p.b]);
    EXPECT_EQ(p.grade == 2, same_doc);
    if (p.grade == 1) EXPECT_EQ(b.val.group[p.a], b.val.group[p.b]);
    if (p.grade == 0) EXPECT_NE(b.val.group[p.a], b.val.group[p.b]);
  }
  EXPECT_THROW(make_pair_task("stsb", c), std::invalid_argument);
}

namespace {
// An easy pair task: each text is 3 words of its topic among 5 filler words shared by every topic; grade 1 = the
// same topic. An untrained encoder sees mostly the filler; a trained one must learn which words carry the topic.
PairSplit topic_split(int n, std::mt19937_64& rng, int first_doc) {
  const std::vector<std::vector<std::string>> topics = {{"cat", "dog", "horse", "cow", "sheep", "goat"},
                                                        {"car", "bus", "truck", "train", "plane", "boat"},
                                                        {"red", "blue", "green", "pink", "gray", "teal"},
                                                        {"one", "two", "six", "ten", "nine", "four"}};
  const std::vector<std::string> filler = {"the", "a", "of", "and", "then", "so", "it", "was", "we", "saw", "there", "here"};
  PairSplit s;
  for (int i = 0; i < n; i++) {
    const int g = i % 4;
    std::vector<std::string> words;
    for (int k = 0; k < 3; k++) words.push_back(topics[g][rng() % 6]);
    for (int k = 0; k < 5; k++) words.push_back(filler[rng() % filler.size()]);
    std::shuffle(words.begin(), words.end(), rng);
    std::string text;
    for (auto& w : words) text += (text.empty() ? "" : " ") + w;
    s.texts.push_back(text), s.ids.push_back("s" + std::to_string(first_doc + i)), s.doc.push_back(first_doc + i),
        s.group.push_back(g);
  }
  return s;
}

PairTask topic_task() {
  std::mt19937_64 rng(5);
  PairTask t;
  t.name = "topics", t.grades = 2;
  t.train = topic_split(400, rng, 0), t.val = topic_split(80, rng, 1000), t.test = topic_split(80, rng, 2000);
  t.val_pairs = sample_pairs(t.val, 2, 100, rng), t.test_pairs = sample_pairs(t.test, 2, 200, rng);
  tokenize_task(t, "bytes", 0, 64);
  return t;
}

CosentConfig tiny_config() {
  CosentConfig c;
  c.d_model = 32, c.layers = 1, c.batch = 16, c.steps = 80, c.eval_every = 40, c.queries = 40, c.max_len = 64;
  return c;
}

harness::RunContext quiet_ctx(const std::string& dir) {
  harness::RunContext ctx;
  ctx.out = dir, ctx.dir = dir + "/cell", ctx.quiet = true;
  std::filesystem::create_directories(ctx.dir);
  return ctx;
}

harness::Preset load(const harness::Experiment& e, const std::string& name) {
  return harness::load_preset(name, e.presets_dir, std::vector<harness::Axis>(e.axes.begin(), e.axes.end()));
}

// A miniature of the default preset on the sentiment pairs: width 16, BPE 100 merges, 40 val / 40 test pairs, 4 steps
// with a point every 2, the lr grid {3e-3}, seeds 0 and 1.
harness::Preset mini_preset(const std::string& dir, const std::vector<std::string>& arms) {
  const harness::Experiment e = cosent_experiment();
  json p = {{"description", "test"},
            {"tasks", {"sentiment"}},
            {"arms", arms},
            {"seeds", {0, 1}},
            {"defaults",
             {{"lrs", "0.003"},
              {"steps", 4},
              {"eval_every", 2},
              {"d_model", 16},
              {"batch", 16},
              {"bpe_merges", 100},
              {"max_len", 64},
              {"queries", 40},
              {"val_pairs", 40},
              {"test_pairs", 40}}}};
  harness::write_text_atomic(dir + "/mini.json", p.dump(2));
  return harness::load_preset(dir + "/mini.json", e.presets_dir, load(e, "default").axes);
}
}  // namespace

TEST(StudiesCosent, CosentLearnsAnEasyPairTaskAndLrZeroDoesNot) {
  const std::string d = dl::test::app_temp_dir("studies_cosent_learns");
  const PairTask t = topic_task();
  const CosentConfig c = tiny_config();
  const TrainResult trained = train_encoder(t, "cosent", 1e-2, 0, c, quiet_ctx(d + "/a"));
  const TrainResult still = train_encoder(t, "cosent", 1e-8, 0, c, quiet_ctx(d + "/b"));
  // measured: 0.85 trained, 0.32 at lr 1e-8
  EXPECT_GT(trained.test, 0.7) << "80 steps of CoSENT should order same-topic pairs above different-topic ones";
  EXPECT_LT(still.test, 0.5) << "with lr ~0 the encoder stays at its initialisation";
  EXPECT_GT(trained.mrr, still.mrr);
  EXPECT_EQ(trained.curve_steps, (std::vector<double>{0, 40, 80}));
  EXPECT_THROW(train_encoder(t, "triplet", 1e-3, 0, c, quiet_ctx(d + "/c")), std::invalid_argument);
  const TrainResult untrained = train_encoder(t, "cosent", 0, 0, c, quiet_ctx(d + "/d"));
  EXPECT_EQ(untrained.curve_steps, (std::vector<double>{0})) << "lr 0: the encoder at its initialisation, not trained";
  EXPECT_EQ(TrainResult::from_json(trained.to_json()).to_json(), trained.to_json());
}

TEST(StudiesCosent, MiniatureRunWritesItsTable) {
  const std::string d = dl::test::app_temp_dir("studies_cosent");
  const harness::Experiment e = cosent_experiment();
  const harness::Preset p = mini_preset(d, {"untrained", "cosent", "softmax", "cos_mse"});
  harness::run_cells(e, p, harness::expand_cells(e, p, p.values, p.seeds, {}), dl::test::quiet_in(d + "/out"));
  harness::write_reports(e, p, d + "/out");
  const std::string md = harness::read_text(d + "/out/results.md");
  for (const char* row : {"| sentiment | untrained | 0 | 2 |", "| sentiment | cosent | 0.003 | 2 |",
                          "| sentiment | softmax | 0.003 | 2 |", "| sentiment | cos_mse | 0.003 | 2 |",
                          "| sentiment | cosent - softmax |", "| sentiment | cosent | 0.003 |", "## Retrieval examples"})
    EXPECT_NE(md.find(row), std::string::npos) << row << "\n" << md;
  EXPECT_LT(md.find("cosent - softmax"), md.find("cosent - cos_mse")) << "the paired rows in the arms' order\n" << md;
  EXPECT_TRUE(std::filesystem::exists(d + "/out/plots/sentiment_spearman_vs_step.dat"));
  // seed 0 (the selection seed) of a loss is the grid's run at the chosen lr, read from the selection folder
  const json point = json::parse(harness::read_text(d + "/out/selection/sentiment/softmax/lr0.003/result.json"));
  const harness::CellResult r0 =
      harness::read_result(d + "/out", harness::expand_cells(e, p, {{"sentiment"}, {"softmax"}}, {0}, {})[0]);
  EXPECT_EQ(r0.metric("test"), point["result"]["test"].get<double>());
  EXPECT_FALSE(r0.extra["examples"].empty()) << "the retrieval examples of the selection run";
  EXPECT_FALSE(std::filesystem::exists(d + "/out/cells/sentiment__softmax__seed0/train")) << "not trained a second time";
}

// The presets: "default" the settings the study always had by default (150 steps, lr grid {3e-3, 1e-2}), "large" the
// setting of the docs' large tables (300 steps, {1e-3, 3e-3, 1e-2}); the rest is shared. An unknown preset is named.
TEST(StudiesCosent, PresetsSelectTheDocumentedSettings) {
  const harness::Experiment e = cosent_experiment();
  auto cell = [&](const std::string& preset) {
    const harness::Preset p = load(e, preset);
    EXPECT_EQ(p.seeds, (std::vector<int>{0, 1, 2})) << preset;
    EXPECT_EQ(p.values[0], (std::vector<std::string>{"brown", "sentiment"})) << preset;
    EXPECT_EQ(p.values[1].size(), 4u) << preset;
    return harness::config_from_json<CosentConfig>(harness::expand_cells(e, p, {{"brown"}, {"cosent"}}, {0}, {})[0].config,
                                                   preset);
  };
  const CosentConfig d = cell("default"), l = cell("large"), plain;
  EXPECT_EQ(d.steps, 150);
  EXPECT_EQ(d.lr_list(), (std::vector<double>{3e-3, 1e-2}));
  EXPECT_EQ(l.steps, 300);
  EXPECT_EQ(l.lr_list(), (std::vector<double>{1e-3, 3e-3, 1e-2}));
  EXPECT_EQ(plain.steps, d.steps);
  EXPECT_EQ(plain.lrs, d.lrs);
  for (const CosentConfig* c : {&d, &l})  // the rest is shared
    EXPECT_TRUE(c->batch == 32 && c->eval_every == 25 && c->d_model == 64 && c->selection_seed == 0 && c->layer == "dilatedconv");
  const std::string err = dl::test::error_of([&] { load(e, "huge"); });
  EXPECT_NE(err.find("huge"), std::string::npos) << err;
}

TEST(StudiesCosent, BadSettingsAndTheOldCommandLine) {
  const harness::Experiment e = cosent_experiment();
  const harness::Preset p = load(e, "default");
  auto error = [&](const std::vector<std::string>& sets) {
    return dl::test::error_of([&] { harness::expand_cells(e, p, {{"brown"}, {"cosent"}}, {0}, sets); });
  };
  EXPECT_EQ(error({}), "");
  EXPECT_NE(error({"lrs=\"0.01,x\""}).find("'x'"), std::string::npos);
  EXPECT_NE(error({"batch=1"}).find("'batch'"), std::string::npos);
  EXPECT_NE(error({"tokenizer=words"}).find("'tokenizer'"), std::string::npos);
  EXPECT_NE(error({"layer=nosuchlayer"}).find("nosuchlayer"), std::string::npos);
  EXPECT_NE(error({"arm=softmax"}).find("--arms"), std::string::npos) << "an axis";
  using V = std::vector<std::string>;
  EXPECT_EQ(legacy_args({"--preset", "large", "--losses", "cosent,softmax", "--seeds", "3", "--lrs", "0.01", "--d-model=32"},
                        cosent_legacy_flags()),
            (V{"run", "--preset", "large", "--arms", "untrained,cosent,softmax", "--seeds", "0-2", "--set", "lrs=\"0.01\"",
               "--set", "d_model=32"}));
}

// Killed (as a SIGKILL would) inside the first lr point's training and again later, resumed each time: every cell's
// metrics and curve equal the uninterrupted run's, and so do the tables.
TEST(StudiesCosent, AKilledRunResumesToTheUninterruptedResultsAndTables) {
  const std::string d = dl::test::app_temp_dir("studies_cosent_resume");
  const harness::Experiment e = cosent_experiment();
  const harness::Preset p = mini_preset(d, {"cosent", "softmax"});
  const std::vector<harness::Cell> cells =
      harness::expand_cells(e, p, {{"sentiment"}, {"cosent", "softmax"}}, p.seeds, {"steps=8", "lrs=\"0.003,0.01\""});
  // stopped at step 5 (checkpoint 4), and again later
  const auto [whole, resumed] = dl::test::sweep_whole_and_resumed(e, p, cells, d, 4);
  dl::test::expect_same_cells_and_table(whole, resumed, {"/metrics", "/curve"});
}
