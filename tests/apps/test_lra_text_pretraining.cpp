// tests/apps/test_lra_text_pretraining.cpp - the text-masked regime (data.h's text_corpus_data): pretraining on
// English text instead of the task's own data. The corpus windows (lengths, byte tokens, which part of the corpus,
// none of Brown), the refusal of a task whose tokens are not bytes, a miniature cell end to end, and the report's
// text-minus-self note against a hand computation.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "app_test_util.h"
#include "apps/common/experiment.h"
#include "apps/lra_benchmark/app.h"
#include "apps/lra_benchmark/config.h"
#include "apps/lra_benchmark/data.h"
#include "apps/lra_benchmark/report.h"
#include "tasks/english.h"
#include "tasks/tokenizer.h"

using namespace lra;
namespace harness = dl::harness;
namespace tasks = dl::tasks;

static CellConfig small_text() {
  CellConfig c;
  c.task = "text", c.model = "transformer", c.regime = "text-masked";
  c.seq_len = 256, c.train_size = 40, c.val_size = 12, c.test_size = 12;
  return c;
}

static std::string bytes_of(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (char)(unsigned char)(id - tasks::ByteTokenizer::byte_offset);
  return s;
}

TEST(LraTextPretraining, WindowsAreFortunesBytesAsLongAsTheTasksExamples) {
  const CellConfig c = small_text();
  const tasks::TaskData& task = task_data(c);
  const tasks::TaskData corpus = text_corpus_data(c, task);
  const tasks::EnglishCorpus english = tasks::english_corpus();
  const std::string brown = english.text.substr(0, (size_t)english.brown_bytes);
  const std::string fortunes = english.text.substr((size_t)english.brown_bytes);
  const size_t cut = fortunes.size() * 95 / 100;
  for (auto [from, to, lo, hi] : {std::tuple{&task.train, &corpus.train, (size_t)0, cut},
                                  std::tuple{&task.val, &corpus.val, cut, fortunes.size()}}) {
    ASSERT_EQ(from->examples.size(), to->examples.size()) << to->name;
    EXPECT_EQ(to->vocab_size, from->vocab_size);
    for (size_t i = 0; i < to->examples.size(); i++) {
      const auto& e = to->examples[i];
      ASSERT_EQ(e.tokens.size(), from->examples[i].tokens.size()) << to->name << " example " << i;
      EXPECT_EQ(e.label, from->examples[i].label);
      const std::string text = bytes_of(e.tokens);
      const size_t at = fortunes.find(text, lo);
      EXPECT_TRUE(at != std::string::npos && at + text.size() <= hi) << to->name << " example " << i << " is not from its part";
      if (i < 4 && text.size() >= 64) EXPECT_EQ(brown.find(text), std::string::npos) << "a window of Brown text";
      EXPECT_NE(text, bytes_of(from->examples[i].tokens));
    }
  }
  // the same seed draws the same windows; another seed others
  EXPECT_EQ(text_corpus_data(c, task).train.examples[0].tokens, corpus.train.examples[0].tokens);
  CellConfig other = c;
  other.seed = 1;
  EXPECT_NE(text_corpus_data(other, task).train.examples[0].tokens, corpus.train.examples[0].tokens);
}

TEST(LraTextPretraining, TaskWhoseTokensAreNotBytesIsRefusedByName) {
  CellConfig c = small_text();
  c.task = "listops", c.seq_len = 64, c.train_size = 16;
  try {
    text_corpus_data(c, task_data(c));
    FAIL() << "listops was accepted";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("listops/transformer/text-masked"), std::string::npos) << m;
    EXPECT_NE(m.find("has vocabulary"), std::string::npos) << m;
  }
}

// A miniature text sweep over scratch, spt-masked and text-masked: every cell finishes, the two pretrained ones
// record a pretraining loss, and text-masked's is on the fortunes (its backbone differs from spt-masked's).
TEST(LraTextPretraining, MiniatureCellsOfTheThreeRegimesRun) {
  const std::string d = dl::test::app_temp_dir("text_pretraining");
  std::ofstream(d + "/p.json") << R"({
    "tasks": ["text"], "models": ["transformer"], "regimes": ["scratch", "spt-masked", "text-masked"],
    "defaults": {"d_model": 16, "layers": 1, "heads": 2, "dropout": 0.0, "batch": 4, "steps": 4, "warmup": 1,
                 "eval_every": 2, "eval_batches": 2, "checkpoint_every": 2, "pretrain_steps": 4, "seq_len": 128,
                 "train_size": 16, "val_size": 8, "test_size": 8}
  })";
  harness::Experiment e = experiment();
  harness::Preset p = load_preset(d + "/p.json");
  harness::SweepOptions o;
  o.out = d + "/out", o.quiet = true;
  auto cells = harness::expand_cells(e, p, {{"text"}, {"transformer"}, {"scratch", "spt-masked", "text-masked"}}, {0}, {});
  auto rs = harness::run_cells(e, p, cells, o);
  ASSERT_EQ(rs.size(), 3u);
  double self_loss = -1, text_loss = -1;
  for (auto& r : rs) {
    EXPECT_EQ(r.metrics.count("test_acc"), 1u) << r.cell.label();
    if (r.cell.value("regime") == "spt-masked") self_loss = r.metric("pretrain_final_loss");
    if (r.cell.value("regime") == "text-masked") text_loss = r.metric("pretrain_final_loss");
  }
  EXPECT_GT(self_loss, 0);
  EXPECT_GT(text_loss, 0);
  EXPECT_NE(self_loss, text_loss);  // the same model, seed and steps on other data
}

// The footer's text-minus-self line on results made by hand (two seeds: ± = |d1 - d2| / 2).
TEST(LraTextPretraining, ReportComparesTheTwoSourcesAgainstAHandComputation) {
  std::vector<harness::CellResult> rs;
  auto add = [&](const std::string& regime, double s0, double s1) {
    for (int seed : {0, 1}) {
      harness::CellResult r;
      r.cell.axes = {"task", "model", "regime"}, r.cell.values = {"text", "transformer", regime}, r.cell.seed = seed;
      r.metrics = {{"val_acc", 0.5}, {"test_acc", seed == 0 ? s0 : s1}};
      r.test_examples = 500, r.extra["val_examples"] = 500;
      rs.push_back(r);
    }
  };
  add("scratch", 0.40, 0.42);
  add("spt-masked", 0.50, 0.46);
  add("text-masked", 0.44, 0.44);
  harness::Preset p;
  p.name = "hand";
  harness::Table t = lra_report(dl::test::app_temp_dir("text_report"), p, rs);
  std::string notes;
  for (auto& n : t.notes) notes += n + "\n";
  // text - self: -0.06 and -0.02 -> -4.0 +- 2.0 points
  EXPECT_NE(notes.find("minus self-pretraining on the task's own training split, both masked denoising for the same steps "
                       "(paired by seed): text/transformer -4.0 ± 2.0."),
            std::string::npos)
      << notes;
  // text-masked's own gain over scratch, in its row: +0.04, +0.02 -> +3.0 +- 1.0
  bool seen = false;
  for (auto& row : t.rows)
    if (row[2] == "text-masked") {
      EXPECT_EQ(row[6], "+3.0 ± 1.0");
      seen = true;
    }
  EXPECT_TRUE(seen) << "no text-masked row";
}
