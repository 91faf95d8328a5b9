// tests/apps/test_studies_cosent.cpp - `studies cosent` (apps/studies/cosent.h): Spearman's rho with ties against a
// hand-computed case, the pair sets' document split, a learning test (CoSENT orders an easy synthetic pair task in a
// fixed budget, an lr of ~0 does not) and a miniature run that writes its table. CoSENT's own value and gradient are
// tested in tests/nn/test_losses.cpp (PyTorch fixture, finite differences, right vs wrong ordering): not repeated here.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "app_test_util.h"
#include "apps/common/results.h"
#include "apps/studies/cli.h"
#include "apps/studies/cosent.h"

using namespace studies;

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
    for (size_t i = 0; i < t.train.texts.size(); i++) train_docs.insert(doc_of(t.train.ids[i])), train_texts.insert(t.train.texts[i]);
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

CosentOptions tiny_options() {
  CosentOptions o;
  o.d_model = 32, o.layers = 1, o.batch = 16, o.steps = 80, o.eval_every = 40, o.queries = 40, o.max_len = 64;
  return o;
}
}  // namespace

TEST(StudiesCosent, CosentLearnsAnEasyPairTaskAndLrZeroDoesNot) {
  const PairTask t = topic_task();
  const CosentOptions o = tiny_options();
  const TrainResult trained = train_encoder(t, "cosent", 1e-2, 0, o);
  const TrainResult still = train_encoder(t, "cosent", 1e-8, 0, o);
  // measured: 0.85 trained, 0.32 at lr 1e-8
  EXPECT_GT(trained.test, 0.7) << "80 steps of CoSENT should order same-topic pairs above different-topic ones";
  EXPECT_LT(still.test, 0.5) << "with lr ~0 the encoder stays at its initialisation";
  EXPECT_GT(trained.mrr, still.mrr);
  EXPECT_EQ(trained.curve_steps, (std::vector<double>{0, 40, 80}));
  EXPECT_THROW(train_encoder(t, "triplet", 1e-3, 0, o), std::invalid_argument);
}

TEST(StudiesCosent, MiniatureRunWritesItsTable) {
  CosentOptions o = tiny_options();
  o.out = dl::test::app_temp_dir("studies_cosent");
  o.tasks = {"sentiment"}, o.lrs = {3e-3}, o.seeds = 2, o.steps = 4, o.eval_every = 2, o.d_model = 16, o.bpe_merges = 100;
  o.data.val_pairs = 40, o.data.test_pairs = 40;
  run_cosent(o);
  const std::string md = dl::harness::read_text(o.out + "/cosent.md");
  for (const char* row : {"| sentiment | untrained | 0 | 2 |", "| sentiment | cosent | 0.003 | 2 |",
                          "| sentiment | softmax | 0.003 | 2 |", "| sentiment | cos_mse | 0.003 | 2 |",
                          "| sentiment | cosent - softmax |"})
    EXPECT_NE(md.find(row), std::string::npos) << row << "\n" << md;
  EXPECT_TRUE(std::filesystem::exists(o.out + "/cosent.json"));
  EXPECT_TRUE(std::filesystem::exists(o.out + "/plots/sentiment_spearman_vs_step.dat"));
}

// The two settings of --preset: "default" is the struct's defaults (a few minutes); "large" is the setting of the docs'
// large tables. An unknown preset names the choices, from the function and through the subcommand.
TEST(StudiesCosent, PresetsSelectTheDocumentedSettings) {
  const CosentOptions d = cosent_preset("default"), l = cosent_preset("large"), plain;
  EXPECT_EQ(d.steps, 150);
  EXPECT_EQ(d.lrs, (std::vector<double>{3e-3, 1e-2}));
  EXPECT_EQ(l.steps, 300);
  EXPECT_EQ(l.lrs, (std::vector<double>{1e-3, 3e-3, 1e-2}));
  EXPECT_EQ(plain.steps, d.steps);
  EXPECT_EQ(plain.lrs, d.lrs);
  for (const CosentOptions* o : {&d, &l})  // the rest is shared
    EXPECT_TRUE(o->seeds == 3 && o->batch == 32 && o->eval_every == 25 && o->d_model == 64 && o->tasks.size() == 2);
  const std::string e = dl::test::error_of([] { cosent_preset("huge"); });
  for (const char* word : {"--preset", "'huge'", "default, large"}) EXPECT_NE(e.find(word), std::string::npos) << e;
  CLI::App app;
  add_cosent_command(app);
  EXPECT_NE(dl::test::error_of([&] { app.parse("cosent --preset huge", false); }).find("not one of default, large"),
            std::string::npos);
}
