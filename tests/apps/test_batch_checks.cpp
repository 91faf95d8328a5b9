// tests/apps/test_batch_checks.cpp - what the training phase (apps/common/phase.h) checks before a batch reaches the
// model and while a step runs:
//   - the batch boundary (apps/common/batch_check.h): a token id outside the vocabulary, a label outside the classes
//     and a sequence longer than the positions are named errors - the split, the example's index in it, the field,
//     the value and the allowed range - raised before the loss sees the batch;
//   - every app's evaluation loops check their batches against the same limits, so a doctored validation or test
//     split is named too, and the pretraining phases (FPT's byte LM, pretrained_convs' span corruption) and the
//     studies' phases (nsp_bert) check theirs;
//   - anomaly mode (autograd/anomaly.h, --anomaly): the first op with a NaN or infinite output (forward) or gradient
//     (backward) is named with the step, no update is applied and the last checkpoint stays; a real app's cell
//     trains through it without a false alarm.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "app_test_util.h"
#include "apps/fpt/app.h"
#include "apps/fpt/data.h"
#include "apps/fpt/pretrain.h"
#include "apps/lra_benchmark/app.h"
#include "apps/lra_benchmark/config.h"
#include "apps/lra_benchmark/data.h"
#include "apps/pretrained_convs/app.h"
#include "apps/pretrained_convs/config.h"
#include "apps/pretrained_convs/data.h"
#include "apps/pretrained_convs/model.h"
#include "apps/pretrained_convs/pretrain.h"
#include "apps/studies/nsp_bert.h"
#include "apps/common/batch_check.h"
#include "apps/common/phase.h"
#include "autograd/anomaly.h"
#include "nn/layers.h"
#include "optim/adam.h"
#include "optim/checkpoint.h"
#include "tasks/brown.h"
#include "tasks/listops.h"
#include "tasks/registry.h"

using namespace dl;
using dl::test::toy_data;
namespace harness = dl::harness;
using dl::test::error_of;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A linear model on token counts. Its loss writes counts[token] unchecked: a token id out of range would write past
// the buffer, which is why the phase must stop such a batch before the loss runs.
struct Toy : nn::Module {
  explicit Toy(Generator& g) { lin = register_module("lin", std::make_shared<nn::Linear>(5, 2, g)); }
  std::string type_name() const override { return "Toy"; }
  Var loss(const tasks::Batch& b) {
    auto [counts, y] = test::toy_counts(b);
    return cross_entropy(lin->forward(Var(counts)), y);
  }
  std::shared_ptr<nn::Linear> lin;
};

// One phase of 12 steps over batches of 8 in dataset order (batch k holds examples 8k .. 8k+7), checkpoints every 5.
struct ToyPhase {
  tasks::Dataset data = toy_data();
  Generator g{11};
  Toy m{g};
  optim::AdamW opt{m.parameters(), {}};
  tasks::Batcher batches{data, {8, 5, /*shuffle=*/false, true}};
  harness::PhaseParts parts;
  std::vector<harness::CurvePoint> curve;
  int loss_calls = 0;
  ToyPhase() {
    parts.model = &m, parts.opt = &opt, parts.batches = &batches;
    parts.limits = harness::limits_of(data);
    parts.loss = [this](const tasks::Batch& b, const harness::Step&) {
      loss_calls++;
      return m.loss(b);
    };
  }
  std::string run_error(const std::string& dir) {
    harness::RunContext c;
    c.out = c.dir = dir, c.label = "[toy]", c.quiet = true;
    return error_of([&] { harness::run_phase({"train", 12, 1, 1.0, 0, 5}, parts, c, curve); });
  }
  std::vector<float> weights() const {
    Tensor w = m.lin->weight.data().contiguous();
    return std::vector<float>(w.data<float>(), w.data<float>() + w.numel());
  }
};

}  // namespace

// ---- the batch boundary ----

TEST(BatchChecks, LimitsComeFromTheSplitTheModelIsBuiltFrom) {
  harness::BatchLimits l = harness::limits_of(toy_data());
  EXPECT_EQ(l.vocab, 5);
  EXPECT_EQ(l.classes, 2);
  EXPECT_EQ(l.positions, 6);
  EXPECT_EQ(l.split, "toy/train");
  tasks::Dataset continuous;  // features, no vocabulary; no labels
  continuous.feature_dim = 3, continuous.vocab_size = 7, continuous.max_len = 4;
  l = harness::limits_of(continuous);
  EXPECT_EQ(l.vocab, 0);
  EXPECT_EQ(l.classes, 0);
  EXPECT_EQ(l.positions, 4);
}

TEST(BatchChecks, ATokenOutsideTheVocabularyIsNamedBeforeTheLossRuns) {
  ToyPhase p;
  p.data.examples[17].tokens[3] = 9;  // batch 2 (the step 2), row 1
  std::string msg = p.run_error(dl::test::app_temp_dir("batch_check_token"));
  EXPECT_TRUE(contains(msg, "[toy] train step 2: toy/train example 17 (row 1 of the batch): tokens[3] = 9 is outside the "
                            "model's vocabulary [0, 5)"))
      << msg;
  EXPECT_EQ(p.loss_calls, 2) << "the loss must not see the bad batch";
}

TEST(BatchChecks, ANegativeTokenAndOneInTheSecondSequenceAreNamed) {
  tasks::Dataset d = toy_data();
  d.examples[2].tokens[0] = -1;
  for (auto& e : d.examples) e.tokens2 = {1, 2};
  d.examples[5].tokens2[1] = 5;
  tasks::Batcher bt(d, {8, 0, false});
  harness::BatchLimits l = harness::limits_of(d);
  std::string msg = error_of([&] { harness::check_batch(bt.collate({0, 1, 2}), l, "here"); });
  EXPECT_EQ(msg, "here: toy/train example 2 (row 2 of the batch): tokens[0] = -1 is outside the model's vocabulary [0, 5)");
  msg = error_of([&] { harness::check_batch(bt.collate({4, 5}), l, "here"); });
  EXPECT_EQ(msg, "here: toy/train example 5 (row 1 of the batch): tokens2[1] = 5 is outside the model's vocabulary [0, 5)");
  EXPECT_NO_THROW(harness::check_batch(bt.collate({0, 1, 3, 4}), l, "here"));
}

TEST(BatchChecks, ALabelOutsideTheClassesIsNamed) {
  ToyPhase p;
  p.data.examples[20].label = 2;  // batch 2, row 4
  std::string msg = p.run_error(dl::test::app_temp_dir("batch_check_label"));
  EXPECT_TRUE(contains(msg, "[toy] train step 2: toy/train example 20 (row 4 of the batch): label 2 is outside the "
                            "model's classes [0, 2)"))
      << msg;
  EXPECT_EQ(p.loss_calls, 2);
  tasks::Dataset d = toy_data();
  d.examples[0].label = -1;  // an unlabelled example in a classification split
  tasks::Batcher bt(d, {8, 0, false});
  msg = error_of([&] { harness::check_batch(bt.collate({0}), harness::limits_of(d), "here"); });
  EXPECT_TRUE(contains(msg, "example 0 (row 0 of the batch): label -1 is outside the model's classes [0, 2)")) << msg;
}

TEST(BatchChecks, ASequenceLongerThanThePositionsIsNamed) {
  ToyPhase p;
  p.data.examples[9].tokens = {0, 1, 2, 3, 4, 0, 1, 2};  // 8 tokens, the model has 6 positions; batch 1, row 1
  std::string msg = p.run_error(dl::test::app_temp_dir("batch_check_length"));
  EXPECT_TRUE(contains(msg, "[toy] train step 1: toy/train example 9 (row 1 of the batch): tokens has length 8, longer "
                            "than the model's 6 positions"))
      << msg;
  EXPECT_EQ(p.loss_calls, 1);
  // padding alone past the positions (a fixed length longer than the model's) is named too
  tasks::Dataset d = toy_data();
  tasks::Batcher padded(d, {8, 0, false, false, /*fixed_len=*/10});
  msg = error_of([&] { harness::check_batch(padded.collate({0, 1}), harness::limits_of(d), "here"); });
  EXPECT_EQ(msg, "here: the batch's tokens are padded to length 10, longer than the model's 6 positions");
}

TEST(BatchChecks, CleanDataOrNoLimitsChangeNothing) {
  ToyPhase p;
  EXPECT_EQ(p.run_error(dl::test::app_temp_dir("batch_check_clean")), "");
  EXPECT_EQ(p.loss_calls, 12);
  tasks::Dataset d = toy_data();
  d.examples[0].tokens[0] = 99, d.examples[0].label = 7;
  tasks::Batcher bt(d, {8, 0, false});
  EXPECT_NO_THROW(harness::check_batch(bt.collate({0}), harness::BatchLimits{}, "here"));  // nothing asked for
}

TEST(BatchChecks, EveryRegisteredTaskKeepsTheRangesItDeclares) {
  // what lets an app set parts.limits = limits_of(data.train): every split of every task (small, generated ones; the
  // long Path-X variants, speech and the official-data-only CIFAR-10 left out for time) stays inside the vocabulary,
  // classes and max_len its training split declares
  for (const char* name : {"listops", "text", "retrieval", "image", "pathfinder", "image_patches", "bit_memory", "bit_xor",
                           "brown_genre", "spam_assassin", "wordnet_supersense"}) {
    tasks::TaskData d = tasks::make_task(name, {0, 64, 32, 32, 1, ""});
    const harness::BatchLimits l = harness::limits_of(d.train);
    EXPECT_TRUE(l.any()) << name;
    for (const tasks::Dataset* split : {&d.train, &d.val, &d.test}) {
      tasks::Batcher bt(*split, {16, 0, false});
      for (int64_t i = 0; i < bt.batches_per_epoch(); i++)
        EXPECT_NO_THROW(harness::check_batch(bt.next(), l, name)) << name << " " << split->name;
    }
  }
}

// ---- anomaly mode in the training phase ----

TEST(BatchChecks, AnomalyModeNamesTheOpAndTheStepAndKeepsTheLastCheckpoint) {
  for (const std::string pass : {"forward", "backward"}) {
    ToyPhase p;
    std::vector<float> before;
    p.parts.loss = [&](const tasks::Batch& b, const harness::Step& s) {
      Var l = p.m.loss(b);
      if (s.step != 7) return l;
      before = p.weights();
      // forward: sqrt of a negative is NaN; backward: sqrt(0) = 0 is finite but its gradient 1 / (2 sqrt(0)) is not
      return sqrt(mul_scalar(l, pass == "forward" ? -1.0 : 0.0));
    };
    AnomalyModeGuard on;
    const std::string dir = dl::test::app_temp_dir("batch_check_anomaly_" + pass);
    std::string msg = p.run_error(dir);
    EXPECT_TRUE(contains(msg, "[toy] train: step 7: anomaly mode: the " + pass + " of op 'sqrt'")) << msg;
    EXPECT_TRUE(contains(msg, pass == "forward" ? "NaN at element 0" : "+Inf at element 0")) << msg;
    EXPECT_TRUE(contains(msg, "no update was applied; the last checkpoint (step 5")) << msg;
    EXPECT_EQ(p.weights(), before) << "no update after the anomaly";
    auto last = optim::latest_checkpoint(dir + "/train");  // still there, and still the newest
    ASSERT_TRUE(last.has_value());
    EXPECT_EQ(last->step, 5);
  }
}

TEST(BatchChecks, AnomalyModeIsOffWithoutTheFlagAndARealCellTrainsCleanThroughIt) {
  EXPECT_FALSE(anomaly_mode());
  // the classify app, three kinds of mixer, a few steps each with --anomaly: no false alarm from any op
  const std::string out = dl::test::app_temp_dir("batch_check_anomaly_classify");
  for (const char* layer : {"s4d", "attention", "lstm"}) {
    const std::string cmd = std::string(DL_BINARY_DIR) + "/classify cell --task listops --layer " + layer +
                            " --seed 0 --threads 1 --quiet --anomaly --set seq_len=64 --set train_size=64 --set val_size=16"
                            " --set test_size=16 --set d_model=16 --set batch=8 --set steps=4 --set warmup=1 --set eval_every=4 --out " +
                            out + "/" + layer + " > " + out + "/" + layer + ".log 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << layer << ": see " << out << "/" << layer << ".log";
  }
}

// ---- each app's training phases check what its model reads ----
// A cached task (each app makes its splits once per process) doctored in every training example reaches the app's
// own cell, so whichever batch comes first carries the bad value; the names in the error are the model's limits,
// not the split's. The examples are restored after, for the tests that share the process's cache.

namespace {

// Sets field(e) = value in every example of the split, runs `run`, restores them; returns the error.
template <class Field, class Run>
std::string with_doctored(tasks::Dataset& split, Field field, int32_t value, Run run) {
  std::vector<int32_t> saved;
  for (auto& e : split.examples) saved.push_back(field(e)), field(e) = value;
  std::string msg = error_of(run);
  for (size_t i = 0; i < saved.size(); i++) field(split.examples[i]) = saved[i];
  return msg;
}

int32_t& label_of(tasks::Example& e) { return e.label; }

int32_t& first_token(tasks::Example& e) { return e.tokens.at(0); }

}  // namespace

TEST(BatchChecks, LraPhasesCheckTheEmbeddingTheHeadsAndThePretrainingTargets) {
  const std::string d = dl::test::app_temp_dir("batch_check_lra");
  std::ofstream(d + "/mini.json") << R"({"tasks": ["listops"], "models": ["s4d"], "regimes": ["scratch", "spt-masked"],
    "defaults": {"d_model": 8, "layers": 1, "d_state": 4, "batch": 8, "steps": 2, "warmup": 1, "eval_every": 2,
                 "eval_batches": 1, "checkpoint_every": 2, "pretrain_steps": 2, "seq_len": 32, "train_size": 32,
                 "val_size": 8, "test_size": 8}})";
  harness::Experiment e = lra::experiment();
  harness::Preset p = lra::load_preset(d + "/mini.json");
  harness::SweepOptions o;
  o.quiet = true;
  auto cells = harness::expand_cells(e, p, p.values, {0}, {});
  auto& data = const_cast<tasks::TaskData&>(lra::task_data(lra::CellConfig::from_json(cells.at(0).config, "test")));
  const int32_t V = data.train.vocab_size, C = data.train.num_classes;
  auto run = [&](const harness::Cell& cell, const std::string& out) {
    o.out = d + "/" + out;
    return [&, cell] { harness::run_cells(e, p, {cell}, o); };
  };
  // fine-tuning: the embedding has V + 1 rows (the mask token), so V passes and V + 1 is named
  std::string msg = with_doctored(data.train, first_token, V + 1, run(cells.at(0), "token"));
  EXPECT_TRUE(contains(msg, "finetune step 0: listops/train example ")) << msg;
  EXPECT_TRUE(contains(msg, "tokens[0] = " + std::to_string(V + 1) + " is outside the model's vocabulary [0, " +
                                std::to_string(V + 1) + ")"))
      << msg;
  msg = with_doctored(data.train, [](tasks::Example& x) -> int32_t& { return x.label; }, C, run(cells.at(0), "label"));
  EXPECT_TRUE(contains(msg, "label " + std::to_string(C) + " is outside the model's classes [0, " + std::to_string(C) + ")"))
      << msg;
  // pretraining: the token is its own target, so the pretraining head's V outputs are the limit
  msg = with_doctored(data.train, first_token, V, run(cells.at(1), "pretrain"));
  EXPECT_TRUE(contains(msg, "pretrain step 0: listops/train example ")) << msg;
  EXPECT_TRUE(contains(msg, "tokens[0] = " + std::to_string(V) + " is outside the model's vocabulary [0, " +
                                std::to_string(V) + ")"))
      << msg;
  // evaluation: training and validation are clean, the test split is not - the final evaluation names it
  msg = with_doctored(data.test, first_token, V + 1, run(cells.at(0), "test_token"));
  EXPECT_TRUE(contains(msg, "evaluation batch 0: listops/test example 0 (row 0 of the batch): tokens[0] = " +
                                std::to_string(V + 1) + " is outside the model's vocabulary [0, " + std::to_string(V + 1) + ")"))
      << msg;
  // and the pretraining phase's validation loss checks the validation split with the pretraining head's limit
  msg = with_doctored(data.val, first_token, V, run(cells.at(1), "pretrain_val"));
  EXPECT_TRUE(contains(msg, "pretraining evaluation batch 0: listops/val example 0 (row 0 of the batch): tokens[0] = " +
                                std::to_string(V) + " is outside the model's vocabulary [0, " + std::to_string(V) + ")"))
      << msg;
}

TEST(BatchChecks, FptCellChecksItsInputEmbeddingAndOutputs) {
  const std::string d = dl::test::app_temp_dir("batch_check_fpt");
  harness::Experiment e = fpt::experiment();
  harness::Preset p = fpt::load_preset("tiny");
  const std::vector<std::string> sets = {"layers=1", "d_model=8", "heads=2", "train_size=32", "val_size=8", "test_size=8",
                                         "batch=8", "steps=2", "eval_every=2", "checkpoint_every=2", "seq_len=32"};
  harness::SweepOptions o;
  o.out = d, o.quiet = true;
  auto cells = harness::expand_cells(e, p, {{"listops"}, {"random"}}, {0}, sets);  // random: no pretraining to build
  auto& t = const_cast<fpt::FptTask&>(fpt::fpt_task(fpt::CellConfig::from_json(cells.at(0).config, "test")));
  auto run = [&] { harness::run_cells(e, p, cells, o); };
  std::string msg = with_doctored(t.data.train, first_token, (int32_t)t.vocab, run);
  EXPECT_TRUE(contains(msg, "train step 0: " + t.data.train.name + " example ")) << msg;
  EXPECT_TRUE(contains(msg, "is outside the model's vocabulary [0, " + std::to_string(t.vocab) + ")")) << msg;
  msg = with_doctored(t.data.train, label_of, (int32_t)t.outputs, run);
  EXPECT_TRUE(contains(msg, "is outside the model's classes [0, " + std::to_string(t.outputs) + ")")) << msg;
  // a doctored test split: the final evaluation names it
  o.out = d + "/test_label";
  msg = with_doctored(t.data.test, label_of, (int32_t)t.outputs, run);
  EXPECT_TRUE(contains(msg, "evaluation batch 0: " + t.data.test.name + " example 0 (row 0 of the batch): label " +
                                std::to_string(t.outputs) + " is outside the model's classes [0, " + std::to_string(t.outputs) + ")"))
      << msg;
}

TEST(BatchChecks, FptLanguagePretrainingChecksItsWindowsAgainstThePositions) {
  // windows of lm_context + 1 bytes feed n_positions = 1024 positions: a context of 1100 is named at the first batch
  // (unchecked, GPT-2's position table would be indexed past its 1024 rows)
  fpt::CellConfig c;
  c.task = "bit_xor", c.arm = "fpt", c.layers = 1, c.d_model = 8, c.heads = 2, c.dropout = 0.0;
  c.lm_steps = 2, c.lm_batch = 2, c.lm_context = 1100;
  harness::RunContext ctx;
  ctx.quiet = true;
  std::string msg = error_of([&] { fpt::pretrained_transformer("language", c, ctx, /*rebuild=*/true); });
  EXPECT_TRUE(contains(msg, "[language pretraining] lm step 0: english/train example ")) << msg;
  EXPECT_TRUE(contains(msg, "tokens has length 1101, longer than the model's 1025 positions")) << msg;
  for (auto& entry : std::filesystem::directory_iterator(tasks::data_cache_dir() + "/fpt"))  // the unfinished cache entry
    if (entry.path().filename().string().find("-ctx1100-") != std::string::npos) std::filesystem::remove_all(entry.path());
}

TEST(BatchChecks, PconvCellChecksTheSourceAndTheTargetIds) {
  const std::string d = dl::test::app_temp_dir("batch_check_pconv");
  harness::Experiment e = pconv::experiment();
  harness::Preset p = pconv::load_preset("tiny");
  const std::vector<std::string> sets = {"d_model=16", "d_ff=32", "layers=1", "decoder_layers=1", "heads=2",
                                         "train_size=32", "val_size=8", "test_size=8", "batch=8", "steps=2", "warmup=1",
                                         "eval_every=2", "checkpoint_every=2", "eval_examples=8", "max_src=48"};
  harness::SweepOptions o;
  o.out = d, o.quiet = true;
  auto cells = harness::expand_cells(e, p, {{"sentiment"}, {"lightconv"}, {"scratch"}}, {0}, sets);
  auto& t = const_cast<pconv::Seq2SeqTask&>(pconv::seq2seq_task(pconv::CellConfig::from_json(cells.at(0).config, "test")));
  const int32_t V = pconv::vocab_size();
  std::string msg = with_doctored(t.data.train, [](tasks::Example& x) -> int32_t& { return x.tokens2.at(0); }, V,
                                  [&] { harness::run_cells(e, p, cells, o); });
  EXPECT_TRUE(contains(msg, "finetune step 0: " + t.data.train.name + " example ")) << msg;
  EXPECT_TRUE(contains(msg, "tokens2[0] = " + std::to_string(V) + " is outside the model's vocabulary [0, " +
                                std::to_string(V) + ")"))
      << msg;
  // a doctored test split: the final greedy-decoding evaluation names it
  o.out = d + "/test_target";
  msg = with_doctored(t.data.test, [](tasks::Example& x) -> int32_t& { return x.tokens2.at(0); }, V,
                      [&] { harness::run_cells(e, p, cells, o); });
  EXPECT_TRUE(contains(msg, "evaluation batch 0: " + t.data.test.name + " example 0 (row 0 of the batch): tokens2[0] = " +
                                std::to_string(V) + " is outside the model's vocabulary [0, " + std::to_string(V) + ")"))
      << msg;
}

TEST(BatchChecks, PconvSpanCorruptionChecksTheCorruptedWindows) {
  pconv::CellConfig c;
  c.d_model = 16, c.d_ff = 32, c.layers = 1, c.decoder_layers = 1, c.heads = 2;
  c.pt_steps = 2, c.pt_batch = 4, c.pt_len = 32, c.pt_warmup = 1;
  pconv::PretrainData data = pconv::span_corruption_data(c.pt_len, c.density, c.mean_span, 100, 0);
  Generator g(4242);
  nn::Seq2SeqModel m(pconv::plan_model(c).cfg, g);
  const int32_t V = (int32_t)m.cfg.vocab_size;
  harness::RunContext ctx;
  ctx.out = ctx.dir = dl::test::app_temp_dir("batch_check_span_corruption"), ctx.quiet = true, ctx.label = "[span]";
  std::vector<harness::CurvePoint> curve;
  std::string msg = with_doctored(data.train, first_token, V, [&] { pconv::span_corruption(c, data, m, g, ctx, curve); });
  EXPECT_TRUE(contains(msg, "[span] span_corruption step 0: english/span_corruption/train example ")) << msg;
  EXPECT_TRUE(contains(msg, "tokens[0] = " + std::to_string(V) + " is outside the model's vocabulary [0, " +
                                std::to_string(V) + ")"))
      << msg;
  // the validation windows too, at the phase's evaluation (the training windows clean now)
  ctx.out = ctx.dir = dl::test::app_temp_dir("batch_check_span_corruption_val");
  msg = with_doctored(data.val, [](tasks::Example& x) -> int32_t& { return x.tokens2.at(0); }, -1,
                      [&] { pconv::span_corruption(c, data, m, g, ctx, curve); });
  EXPECT_TRUE(contains(msg, "[span] evaluation batch 0: english/span_corruption/val example 0 (row 0 of the batch): "
                            "tokens2[0] = -1 is outside the model's vocabulary")) << msg;
}

TEST(BatchChecks, ClassifySizesItsModelForTheLongestSequenceOfEverySplit) {
  // official-format ListOps files (--set data_path=): the training split's sequences have 4 tokens, the test split
  // holds one of 8. The task states the longest of all three splits (tasks/registry.cpp make_task), so the Encoder is
  // built for 8 positions and the cell evaluates it; before, it was built for the training split's 4 and the
  // evaluation stopped, naming the sequence (that check is tested above, on a batch longer than the model).
  const std::string d = dl::test::app_temp_dir("batch_check_classify");
  std::vector<tasks::ListOpsSample> short_ones, test;
  for (int i = 0; i < 16; i++) short_ones.push_back({"[MAX " + std::to_string(i % 10) + " 1 ]", std::max(i % 10, 1), 0});
  test = {short_ones.begin(), short_ones.begin() + 4};
  test[2] = {"[MAX 2 9 1 3 4 5 ]", 9, 0};
  tasks::write_listops_dir(d + "/listops", short_ones, {short_ones.begin(), short_ones.begin() + 4}, test);
  const std::string cmd = std::string(DL_BINARY_DIR) + "/classify cell --task listops --layer attention --seed 0 --threads 1 "
                          "--quiet --set data_path=" + d + "/listops --set d_model=8 --set layers=1 --set batch=4 "
                          "--set steps=2 --set warmup=1 --set eval_every=2 --out " + d + "/out > " + d + "/log 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream log_in(d + "/log");
  EXPECT_EQ(status, 0) << std::string((std::istreambuf_iterator<char>(log_in)), {});
  EXPECT_TRUE(std::filesystem::exists(d + "/out/results.json"));
}

TEST(BatchChecks, NspBertPretrainingChecksTheEmbedding) {
  // a BERT of 120 ids reads byte ids up to 260: the validation sentences stay below 120 ('a' is 102), the training
  // ones hold '~' (131); the pretraining phase names it at its first batch
  std::vector<studies::SentenceDoc> train, val;
  for (int k = 0; k < 8; k++) {
    train.push_back({}), val.push_back({});
    for (int i = 0; i < 6; i++) train.back().push_back("ab~ ba" + std::to_string(i) + "."), val.back().push_back("ab ba.");
  }
  studies::PretrainOptions o;
  o.bert.vocab = 120, o.bert.d_model = 16, o.bert.layers = 1, o.bert.heads = 2, o.bert.dim_ff = 32, o.bert.max_len = 35;
  o.max_a = 16, o.max_b = 16, o.batch = 4, o.steps = 2, o.val_pairs = 8;
  harness::RunContext ctx;
  ctx.out = ctx.dir = dl::test::app_temp_dir("batch_check_nsp_bert"), ctx.quiet = true;
  Generator g(0);
  studies::BertForPreTraining m(o.bert, g);
  nlohmann::json info;
  std::string msg = error_of([&] { studies::pretrain_bert(m, g, train, val, o, ctx, info); });
  EXPECT_TRUE(contains(msg, "pretrain step 0: nsp_pairs example ")) << msg;
  EXPECT_TRUE(contains(msg, "] = 131 is outside the model's vocabulary [0, 120)")) << msg;
}
