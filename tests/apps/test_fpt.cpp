// tests/apps/test_fpt.cpp - the FPT app (apps/fpt): which parameters each arm trains, the tasks' patching and
// readout positions, the language model's pretraining, a miniature run of every arm with exact resume, and a
// learning test that can fail (FPT solves bit XOR).
#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "apps/fpt/app.h"
#include "app_test_util.h"
#include "apps/common/experiment.h"
#include "apps/fpt/cell.h"
#include "apps/fpt/config.h"
#include "apps/fpt/data.h"
#include "apps/fpt/model.h"
#include "apps/fpt/pretrain.h"
#include "apps/fpt/sweep.h"
#include "tasks/digits.h"
#include "tasks/homology.h"
#include "tensor/safetensors.h"

using namespace fpt;
using namespace dl;
namespace harness = dl::harness;
namespace fs = std::filesystem;

namespace {

CellConfig small_cell(const std::string& task, const std::string& arm) {
  CellConfig c;
  c.task = task, c.arm = arm, c.layers = 2, c.d_model = 16, c.heads = 2, c.lstm_layers = 2, c.dropout = 0.0;
  c.train_size = 64, c.val_size = 32, c.test_size = 32, c.batch = 8, c.steps = 6, c.eval_every = 3, c.checkpoint_every = 3;
  c.lm_steps = 20, c.lm_context = 16, c.lm_batch = 4, c.bitmem_steps = 10;
  if (task == "bit_memory") c.bits = 20, c.patterns = 3, c.patch = 5;
  if (task == "listops") c.seq_len = 32;
  return c;
}

std::vector<std::string> trained(FptModel& m) {
  std::vector<std::string> names;
  for (auto& [n, p] : m.named_parameters(true)) names.push_back(n);
  return names;
}

}  // namespace

TEST(FptArms, EachArmTrainsItsSet) {
  CellConfig c = small_cell("bit_xor", "fpt");
  const FptTask& t = fpt_task(c);
  auto count = [&](const std::string& arm) {
    CellConfig a = c;
    a.arm = arm;
    Generator g(0);
    FptModel m(a, t, g);
    m.freeze();
    return trained(m);
  };
  // fpt: input (w, b), output (w, b), wpe, and per layer ln_1 and ln_2 (w, b), then ln_f (w, b)
  std::vector<std::string> fpt = count("fpt");
  EXPECT_EQ(fpt.size(), 2u + 2u + 1u + 2u * 4u + 2u);
  for (auto& n : fpt) {
    EXPECT_EQ(n.find(".attn."), std::string::npos) << n;
    EXPECT_EQ(n.find(".mlp."), std::string::npos) << n;
    EXPECT_EQ(n.find("wte"), std::string::npos) << n;
  }
  EXPECT_EQ(count("random"), fpt);
  EXPECT_EQ(count("bitmem"), fpt);
  EXPECT_EQ(count("out_only"), (std::vector<std::string>{"output.weight", "output.bias"}));
  EXPECT_EQ(count("out_in").size(), 4u);
  EXPECT_EQ(count("out_in_pos").size(), 5u);
  // per layer: attention has c_attn and c_proj (w, b) = 4, the feed-forward c_fc and c_proj = 4
  EXPECT_EQ(count("fpt_attn").size(), fpt.size() + 2u * 4u);
  EXPECT_EQ(count("fpt_ff").size(), fpt.size() + 2u * 4u);
  CellConfig f = c;
  f.arm = "full";
  Generator g(0);
  FptModel full(f, t, g);
  full.freeze();
  EXPECT_EQ(trained(full).size(), full.named_parameters().size() - 1) << "full trains everything but wte";
}

TEST(FptTasks, PatchingAndReadout) {
  const FptTask& x = fpt_task(small_cell("bit_xor", "fpt"));  // 2 x 5 bits, 1 bit per token
  EXPECT_TRUE(x.bits);
  EXPECT_EQ(x.readout, 5);
  EXPECT_EQ(x.outputs, 2);
  EXPECT_EQ(x.max_len, 10);
  tasks::Batcher bt(x.data.train, {4, 0, false});
  tasks::Batch b = bt.next();
  FptBatch fb = to_batch(x, b);
  ASSERT_EQ(fb.features.shape(), (Shape{4, 10, 1}));
  ASSERT_EQ(fb.targets.shape(), (Shape{4, 5}));
  for (int64_t i = 0; i < 4; i++)
    for (int64_t k = 0; k < 5; k++)  // the target is the XOR of the two strings' bits
      EXPECT_EQ(fb.targets.at({i, k}), (double)((fb.features.at({i, k, 0}) > 0.5) != (fb.features.at({i, 5 + k, 0}) > 0.5)));
  const FptTask& m = fpt_task(small_cell("bit_memory", "fpt"));  // 3 patterns + query of 20 bits, 5 per token
  EXPECT_EQ(m.max_len, 16);
  EXPECT_EQ(m.readout, 4);
  EXPECT_EQ(m.outputs, 10);
  // the readout is the last positions: with causal attention, changing the last token changes only the last row
  CellConfig c = small_cell("bit_memory", "fpt");
  Generator g(1);
  FptModel model(c, m, g);
  model.eval();
  tasks::Batcher mb(m.data.train, {2, 0, false});
  FptBatch in = to_batch(m, mb.next()), changed = in;
  changed.features = in.features.clone();
  changed.features.narrow(1, 15, 1).fill_(3.0);
  NoGradGuard ng;
  Tensor a = model.forward(in).data(), b2 = model.forward(changed).data();
  ASSERT_EQ(a.shape(), (Shape{2, 4, 10}));
  for (int64_t r = 0; r < 4; r++) {
    double diff = 0;
    for (int64_t i = 0; i < 2; i++)
      for (int64_t o = 0; o < 10; o++) diff += std::fabs(a.at({i, r, o}) - b2.at({i, r, o}));
    if (r < 3) EXPECT_EQ(diff, 0.0) << "readout row " << r << " saw the last token";
    else EXPECT_GT(diff, 0.0) << "the last row did not see the last token";
  }
}

TEST(FptPretrain, LanguageModelLowersItsValidationLoss) {
  CellConfig c = small_cell("bit_xor", "fpt");
  c.lm_steps = 60, c.lm_batch = 8, c.lm_context = 32;
  harness::RunContext ctx;
  ctx.quiet = true;
  PretrainedInfo p = pretrained_transformer("language", c, ctx, /*rebuild=*/true);
  ASSERT_TRUE(fs::exists(p.path));
  auto curve = p.info.at("curve");
  ASSERT_GE(curve.size(), 2u);
  double first = curve.front().at("val_loss"), last = curve.back().at("val_loss");
  EXPECT_LT(last, first - 0.3) << "60 steps should lower the byte loss well below its start";
  EXPECT_LT(last, std::log(256.0)) << "worse than a uniform byte";
  EXPECT_GT(p.info.at("corpus").at("brown_documents").get<int>(), 400);
  // a second call reuses the cached file
  PretrainedInfo again = pretrained_transformer("language", c, ctx);
  EXPECT_EQ(again.info.dump(), p.info.dump());
}

// lm_lr is in the cache key of both sources, so it must be the rate they train at (it once never reached the
// optimizer, which ran at AdamW's default 1e-3 whatever lm_lr said). The curve records the lr at each evaluation.
TEST(FptPretrain, BothSourcesTrainAtLmLr) {
  for (const char* source : {"language", "bit_memory"}) {
    CellConfig c = small_cell("bit_xor", "fpt");
    c.lm_steps = 10, c.bitmem_steps = 10, c.lm_batch = 4, c.lm_context = 16, c.lm_lr = 4e-3;
    harness::RunContext ctx;
    ctx.quiet = true;
    PretrainedInfo p = pretrained_transformer(source, c, ctx, /*rebuild=*/true);
    double peak = 0;
    for (auto& pt : p.info.at("curve")) peak = std::max(peak, pt.at("lr").get<double>());
    EXPECT_GT(peak, 2e-3) << source << ": trained below lm_lr 4e-3 (peak recorded lr " << peak << ")";
    EXPECT_LE(peak, 4e-3 * (1 + 1e-12)) << source << ": trained above lm_lr";
  }
}

TEST(FptSweep, EveryArmRunsAndResumesExactly) {
  std::string d = dl::test::app_temp_dir("fpt_arms");
  harness::Experiment e = experiment();
  harness::Preset p = load_preset("tiny");
  std::vector<std::string> sets = {"layers=2",    "d_model=16",    "heads=2",      "lstm_layers=2",
                                   "dropout=0.1", "train_size=64", "val_size=32",  "test_size=32",
                                   "batch=8",     "steps=6",       "eval_every=3", "checkpoint_every=3",
                                   "lm_steps=20", "lm_context=16", "lm_batch=4",   "bitmem_steps=10"};
  harness::SweepOptions o;
  o.out = d + "/all", o.quiet = true;
  auto cells = harness::expand_cells(e, p, {{"bit_xor"}, kArms}, {0}, sets);
  auto rs = harness::run_cells(e, p, cells, o);
  ASSERT_EQ(rs.size(), kArms.size());
  std::map<std::string, int64_t> trainable;
  for (auto& r : rs) {
    EXPECT_EQ(r.curve.back().step, 6) << r.cell.label();
    trainable[r.cell.value("arm")] = r.extra.at("trainable_params");
  }
  EXPECT_LT(trainable["out_only"], trainable["out_in"]);
  EXPECT_LT(trainable["out_in"], trainable["out_in_pos"]);
  EXPECT_LT(trainable["out_in_pos"], trainable["fpt"]);
  EXPECT_LT(trainable["fpt"], trainable["fpt_ff"]);
  EXPECT_LT(trainable["fpt"], trainable["full"]);
  EXPECT_EQ(trainable["full"], trainable["full_lang"]);
  std::string md = harness::read_text(o.out + "/results.md");
  EXPECT_NE(md.find("| bit_xor | fpt | language | 1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| bit_xor | bitmem | bit_memory | 1 |"), std::string::npos) << md;
  // a killed fpt cell resumes to the same weights
  auto one = harness::expand_cells(e, p, {{"bit_xor"}, {"fpt"}}, {0}, sets);
  dl::test::expect_killed_cell_resumes(e, p, one[0], o, o.out, d, 4);
}

// sweep-lr's rates are one list, read as the config lists are: the item that is not a positive number is named.
TEST(FptSweep, BadLearningRatesAreNamed) {
  const harness::Experiment e = experiment();
  for (auto [lrs, want] : std::vector<std::pair<std::string, std::string>>{
           {"1e-3,abc", "field '--lrs': 'abc' in \"1e-3,abc\" is not a positive number"},
           {"1e-3,0", "field '--lrs': '0' in \"1e-3,0\" is not a positive number"},
           {"", "sweep-lr: --lrs is empty (give at least one learning rate)"}}) {
    CLI::App app("fpt");
    fpt::SweepCommand sweep(app, e);
    app.parse(std::vector<std::string>{lrs, "--lrs", "sweep-lr"});  // CLI11 reads a vector back to front
    EXPECT_EQ(dl::test::error_of([&] { sweep.run(); }), want) << lrs;
  }
}

TEST(FptConfig, BadInputIsNamed) {
  harness::Preset p = load_preset("tiny");
  EXPECT_NE(dl::test::error_of([&] { resolve_cell(p, "bit_xor", "frozen", {}); }).find("unknown arm 'frozen'"),
            std::string::npos);
  EXPECT_NE(dl::test::error_of([&] {
              resolve_cell(p, "bit_xor", "fpt", {"d_model=10", "heads=4"});
            }).find("not divisible by heads"),
            std::string::npos);
  CellConfig c = small_cell("bit_memory", "fpt");
  c.patch = 3;  // 20 bits in patches of 3
  EXPECT_NE(dl::test::error_of([&] { fpt_task(c); }).find("patch 3 does not divide bits 20"), std::string::npos);
  CellConfig h = small_cell("bit_xor", "fpt");
  h.pretrained = "/nonexistent/gpt2.safetensors";
  harness::RunContext ctx;
  ctx.quiet = true, ctx.dir = dl::test::app_temp_dir("fpt_bad");
  harness::Cell cell{{"task", "arm"}, {"bit_xor", "fpt"}, 0, h.to_json()};
  EXPECT_NE(dl::test::error_of([&] { run_cell(cell, ctx); }).find("/nonexistent/gpt2.safetensors"), std::string::npos);
}

// A learning test that can fail: FPT (a small language-pretrained transformer, attention and feed-forward frozen)
// learns bit XOR. Measured: 100% on 500 validation examples by step 1500 at lr 3e-3 (82.6% at the paper's 1e-3 after
// 1000 steps; at 1e-2 it diverges); the same run at lr 1e-7 stays near chance.
TEST(FptLearning, FrozenPretrainedTransformerSolvesBitXor) {
  std::string d = dl::test::app_temp_dir("fpt_learning");
  harness::Experiment e = experiment();
  harness::Preset p = load_preset("tiny");
  std::vector<std::string> sets = {"layers=2",      "d_model=64",   "heads=4",        "lm_steps=300",          "lm_batch=16",
                                   "lm_context=64", "steps=1500",   "eval_every=500", "checkpoint_every=1500", "train_size=4000",
                                   "val_size=500",  "test_size=500"};
  auto run = [&](const std::string& lr, const std::string& out) {
    std::vector<std::string> s = sets;
    s.push_back("lr=" + lr);
    harness::SweepOptions o;
    o.out = d + "/" + out, o.quiet = true;
    return harness::run_cells(e, p, harness::expand_cells(e, p, {{"bit_xor"}, {"fpt"}}, {0}, s), o).at(0).metric("val_acc");
  };
  double acc = run("0.003", "learn"), control = run("1e-7", "control");
  EXPECT_GE(acc, 0.95) << "FPT did not learn bit XOR";
  EXPECT_LT(control, 0.70) << "learned at lr 1e-7: the threshold tests nothing";
}

// The depth study's arms: "fpt-L<k>" / "random-L<k>" are fpt / random with k layers, whatever `layers` says
// elsewhere; a depth outside kDepths is an unknown arm.
TEST(FptConfig, DepthArmsSetTheirLayers) {
  EXPECT_EQ(split_depth("fpt-L3"), (std::pair<std::string, int>{"fpt", 3}));
  EXPECT_EQ(split_depth("random-L12"), (std::pair<std::string, int>{"random", 12}));
  EXPECT_EQ(split_depth("fpt"), (std::pair<std::string, int>{"fpt", 0}));
  EXPECT_EQ(split_depth("full-L2"), (std::pair<std::string, int>{"full-L2", 0}));
  harness::Preset p = load_preset("tiny");
  CellConfig c = resolve_cell(p, "bit_xor", "fpt-L2", {"layers=4"});
  EXPECT_EQ(c.arm, "fpt");
  EXPECT_EQ(c.layers, 2);
  EXPECT_EQ(resolve_cell(p, "bit_xor", "random-L1", {}).layers, 1);
  EXPECT_NE(dl::test::error_of([&] { resolve_cell(p, "bit_xor", "fpt-L5", {}); }).find("unknown arm 'fpt-L5'"),
            std::string::npos);
  for (const char* preset : {"extras", "ablations", "depth"}) EXPECT_NO_THROW(load_preset(preset)) << preset;
}

// The two packaged-data tasks as FPT sees them: digits as 16 tokens of 2x2 pixels, homology as amino-acid tokens.
TEST(FptTasks, DigitsAndHomology) {
  if (!fs::exists(tasks::digits_default_path) || !fs::exists(std::string(tasks::hmmer_examples_dir) + "/tutorial/fn3.hmm"))
    GTEST_SKIP() << "python3-sklearn or hmmer-examples is not installed";
  const FptTask& d = fpt_task(small_cell("digits", "fpt"));
  EXPECT_FALSE(d.bits);
  EXPECT_EQ(d.features, 4);
  EXPECT_EQ(d.vocab, 0);
  EXPECT_EQ(d.outputs, 10);
  EXPECT_EQ(d.max_len, 16);
  EXPECT_EQ(d.data.train.examples.size(), 64u);
  CellConfig hc = small_cell("homology", "fpt");
  hc.seq_len = 24, hc.families = "fn3,globins4,Pkinase";
  const FptTask& h = fpt_task(hc);
  EXPECT_EQ(h.vocab, 20);
  EXPECT_EQ(h.outputs, 3);
  EXPECT_EQ(h.max_len, 24);
  ASSERT_EQ(h.data.train.examples.size(), 63u) << "64 examples over 3 families: 21 each";
  EXPECT_EQ(h.data.train.examples[1].label, 1);
  hc.families = "fn3,nosuch";
  EXPECT_NE(dl::test::error_of([&] { fpt_task(hc); }).find("no family 'nosuch'"), std::string::npos);
}

// A miniature depth study: the depth arms run (each depth pretrains its own LM) and depth.md has a column per depth.
TEST(FptSweep, DepthStudyReport) {
  if (!fs::exists(tasks::digits_default_path)) GTEST_SKIP() << "python3-sklearn is not installed";
  std::string d = dl::test::app_temp_dir("fpt_depth");
  harness::Experiment e = experiment();
  harness::Preset p = load_preset("tiny");
  std::vector<std::string> sets = {"d_model=16",   "heads=2",    "dropout=0",    "train_size=64", "val_size=32",
                                   "test_size=32", "batch=8",    "steps=4",      "eval_every=4",  "checkpoint_every=4",
                                   "lm_steps=10",  "lm_context=16", "lm_batch=4"};
  harness::SweepOptions o;
  o.out = d + "/run", o.quiet = true;
  auto rs = harness::run_cells(e, p, harness::expand_cells(e, p, {{"digits"}, {"fpt-L1", "fpt-L2", "random-L1"}}, {0}, sets), o);
  ASSERT_EQ(rs.size(), 3u);
  std::map<std::string, int64_t> trainable;
  for (auto& r : rs) trainable[r.cell.value("arm")] = r.extra.at("trainable_params");
  EXPECT_EQ(trainable["fpt-L1"], trainable["random-L1"]);
  EXPECT_GT(trainable["fpt-L2"], trainable["fpt-L1"]) << "a second layer adds its layer norms";
  std::string md = harness::read_text(o.out + "/depth.md");
  EXPECT_NE(md.find("| 1 layers | 2 layers |"), std::string::npos) << md;
  EXPECT_NE(md.find("| digits | random |"), std::string::npos) << md;
  EXPECT_TRUE(fs::exists(o.out + "/plots/depth_digits.png"));
}
