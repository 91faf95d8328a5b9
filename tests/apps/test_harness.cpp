// tests/apps/test_harness.cpp - the experiment harness (apps/common) on its own: typed configs and presets, seeds,
// statistics checked by hand, the table writer, and the training phase: gradient accumulation, exact resume after
// a simulated kill and after a real SIGINT, and the evaluation/checkpoint cadence.
#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "app_test_util.h"
#include "apps/common/config.h"
#include "apps/common/experiment.h"
#include "apps/common/phase.h"
#include "apps/common/signals.h"
#include "apps/common/stats.h"
#include "autograd/profile.h"
#include "nn/layers.h"
#include "optim/adam.h"
#include "optim/checkpoint.h"
#include "op_harness.h"
#include "optim/sgd.h"

using namespace dl;
using dl::test::toy_data;
namespace harness = dl::harness;
namespace fs = std::filesystem;
using dl::test::error_of;
using harness::ConfigError;
using json = nlohmann::json;

struct Cfg {
  int steps = 10, seed = 0;
  double lr = 0.1;
  bool fast = false;
  std::string name = "a";
  template <class C, class F> static void fields(C& c, F&& f) {
    f("steps", c.steps), f("seed", c.seed), f("lr", c.lr), f("fast", c.fast), f("name", c.name);
  }
};

TEST(HarnessConfig, TypedFieldsAndUnknownOnes) {
  Cfg c;
  harness::apply_config(c, {{"steps", 3}, {"lr", 2}, {"fast", true}, {"name", "b"}}, "here");
  EXPECT_EQ(c.steps, 3);
  EXPECT_EQ(c.lr, 2.0);  // an integer is a number
  EXPECT_TRUE(c.fast);
  EXPECT_EQ(c.name, "b");
  EXPECT_EQ(error_of([&] {
              harness::apply_config(c, {{"steps", 1.5}}, "here");
            }),
            "here: field 'steps' must be an integer, found number (1.5)");
  EXPECT_EQ(error_of([&] {
              harness::apply_config(c, {{"fast", "yes"}}, "f.json defaults");
            }),
            "f.json defaults: field 'fast' must be true or false, found string (\"yes\")");
  // a text field takes a JSON object as its text (layer_cfg: `--set layer_cfg={"d_state":8}` as a user writes it)
  harness::apply_overrides(c, {R"(name={"d_state": 8})"});
  EXPECT_EQ(c.name, R"({"d_state":8})");
  EXPECT_EQ(error_of([&] {
              harness::apply_config(c, {{"name", 3}}, "here");
            }),
            "here: field 'name' must be a string, found number (3)");
  EXPECT_EQ(error_of([&] {
              harness::apply_config(c, {{"stepz", 1}}, "here");
            }),
            "here: unknown field 'stepz' (known fields: steps, seed, lr, fast, name)");
  json j = harness::config_to_json(c);
  Cfg back;
  harness::apply_config(back, j, "round trip");
  EXPECT_EQ(harness::config_to_json(back), j);
}

TEST(HarnessConfig, OverridesParseJsonElseString) {
  Cfg c;
  harness::apply_overrides(c, {"lr=3e-4", "name=batch", "fast=true", "steps=7"});
  EXPECT_EQ(c.lr, 3e-4);
  EXPECT_EQ(c.name, "batch");
  EXPECT_TRUE(c.fast);
  EXPECT_EQ(c.steps, 7);
  EXPECT_NE(error_of([&] { harness::apply_overrides(c, {"lr"}); }).find("expected field=value"), std::string::npos);
  EXPECT_NE(
      error_of([&] { harness::apply_overrides(c, {"steps=many"}); }).find("--set steps=many: field 'steps' must be an integer"),
      std::string::npos);
}

// Found by fuzz/fuzz_preset.cpp: `--set lr=<bytes that are not UTF-8>` crashed (nlohmann's dump threw type_error
// while the error message was being built), and such a string field would have crashed the results writer later.
TEST(HarnessConfig, OverridesThatAreNotUtf8OrOutOfRangeAreNamedErrors) {
  Cfg c;
  const std::string msg = error_of([&] { harness::apply_overrides(c, {"lr=\xff\xff$eps=30"}); });
  EXPECT_NE(msg.find("not valid UTF-8 (byte 3 is 0xFF)"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { harness::apply_overrides(c, {"name=caf\xc3"}); }).find("not valid UTF-8"), std::string::npos);
  harness::apply_overrides(c, {"name=caf\xc3\xa9"});  // é: valid UTF-8 passes
  EXPECT_EQ(c.name, "caf\xc3\xa9");
  // also found by the fuzzer: a number beyond a double is nlohmann's out_of_range, not a parse_error
  EXPECT_NE(error_of([&] { harness::apply_overrides(c, {"lr=1e999"}); }).find("--set 'lr=1e999': "), std::string::npos);
  const std::string dir = dl::test::app_temp_dir("harness_big_number");
  std::ofstream(dir + "/p.json") << R"({"defaults": {"lr": 3333333333333333E33333}})";
  EXPECT_NE(error_of([&] { harness::load_preset(dir + "/p.json", dir, {}); }).find("p.json: not valid JSON"), std::string::npos);
}

// A model file's config (its "dl.config" metadata), as `eval --cell`, `fpt attention` and explain read it: every way
// it can be wrong names the file. Before, text that was not JSON escaped as nlohmann's bare parse_error, and a field
// out of range was named by the cell alone (or not at all: the eval paths did not validate).
struct CheckedCfg : Cfg {
  static CheckedCfg from_json(const json& j, const std::string& where) { return harness::config_from_json<CheckedCfg>(j, where); }
  void validate() const { harness::require_positive(name, "lr", lr); }
};

TEST(HarnessConfig, AModelFilesConfigIsReadNamingTheFile) {
  using Meta = std::map<std::string, std::string>;
  const json j = harness::config_in_metadata(Meta{{"dl.config", R"({"lr": 0.5, "name": "t/m"})"}}, "m.safetensors", "app");
  const CheckedCfg c = harness::checked_config_from_json<CheckedCfg>(j, "m.safetensors dl.config");
  EXPECT_EQ(c.lr, 0.5);
  EXPECT_EQ(error_of([&] {
              harness::config_in_metadata(Meta{{"format", "pt"}}, "m.safetensors", "app");
            }),
            "m.safetensors: no dl.config metadata (not a finished cell written by app)");
  EXPECT_EQ(error_of([&] {
              harness::config_in_metadata(Meta{{"dl.config", "{}"}, {"dl.app", "lra_benchmark"}}, "m.safetensors", "fpt");
            }),
            "m.safetensors: a cell of lra_benchmark, not of fpt (open it with lra_benchmark)");
  EXPECT_EQ(harness::config_in_metadata(Meta{{"dl.config", "{}"}, {"dl.app", "fpt"}}, "m.safetensors", "lra_benchmark, fpt"),
            harness::json::object());
  for (const char* text : {"{\"lr\": ", "1e999", "[1, 2"}) {
    const std::string e = error_of([&] { harness::config_in_metadata(Meta{{"dl.config", text}}, "m.safetensors", "app"); });
    EXPECT_EQ(e.rfind("m.safetensors: its dl.config metadata: not valid JSON (", 0), 0u) << text << ": " << e;
  }
  EXPECT_EQ(error_of([&] {
              harness::checked_config_from_json<CheckedCfg>(json{{"lr", "x"}}, "m.safetensors dl.config");
            }),
            "m.safetensors dl.config: field 'lr' must be a number, found string (\"x\")");
  EXPECT_EQ(error_of([&] {
              harness::checked_config_from_json<CheckedCfg>(json{{"lr", 0}, {"name", "t/m"}}, "m.safetensors dl.config");
            }),
            "m.safetensors dl.config: t/m: field 'lr' must be > 0, found 0");
  // both in one call, as eval --cell reads a model file
  EXPECT_EQ(harness::checked_config_in_metadata<CheckedCfg>(Meta{{"dl.config", R"({"lr": 2})"}}, "m.safetensors", "app").lr, 2.0);
  EXPECT_EQ(error_of([&] {
              harness::checked_config_in_metadata<CheckedCfg>(Meta{{"dl.config", R"({"lr": -1})"}}, "m.safetensors", "app");
            }),
            "m.safetensors dl.config: a: field 'lr' must be > 0, found -1");
}

// The command line's number checks say what they want and what they found, and a rate below 1 keeps its digits.
TEST(HarnessConfig, CommandLineNumbersOutOfRangeAreNamed) {
  auto parse = [](const std::string& line) -> std::string {
    CLI::App app("t");
    int threads = 1;
    double temperature = 1;
    app.add_option("--threads", threads)->check(harness::at_least(1));
    app.add_option("--temperature", temperature)->check(harness::at_least(0));
    try {
      app.parse(line, false);
    } catch (const CLI::ParseError& e) {
      return e.what();
    }
    return "parsed " + std::to_string(threads) + " " + std::to_string(temperature);
  };
  EXPECT_EQ(parse("--threads 0"), "--threads: expected a number >= 1, found 0");
  EXPECT_EQ(parse("--threads x"), "--threads: expected a number, found 'x'");
  EXPECT_EQ(parse("--temperature -0.5"), "--temperature: expected a number >= 0, found -0.5");
  EXPECT_EQ(parse("--threads 2 --temperature 0"), "parsed 2 0.000000");
  CLI::App app("t");
  double top_p = 1;
  app.add_option("--top-p", top_p)->check(harness::number_in(0, 1, true));
  EXPECT_THROW(app.parse("--top-p 0", false), CLI::ValidationError);
  try {
    app.parse("--top-p 1.5", false);
  } catch (const CLI::ParseError& e) {
    EXPECT_EQ(std::string(e.what()), "--top-p: expected a number in (0, 1], found 1.5");
  }
  app.parse("--top-p 0.9", false);
  EXPECT_EQ(top_p, 0.9);
  EXPECT_EQ(error_of([] { harness::require_positive("k", "lr", 1e-9 - 1e-9); }), "k: field 'lr' must be > 0, found 0");
  EXPECT_EQ(error_of([] { harness::require_non_negative("k", "clip", -2.5e-4); }),
            "k: field 'clip' must be >= 0, found -0.00025");
}

// A pretrained model's cache: a damaged info.json is named, with what to do about it.
TEST(HarnessConfig, ADamagedCacheInfoIsNamed) {
  const std::string dir = dl::test::app_temp_dir("harness_cache_info");
  std::ofstream(dir + "/info.json") << R"({"val_loss": 1.5})";
  EXPECT_EQ(harness::read_cache_info(dir)["val_loss"], 1.5);
  std::ofstream(dir + "/info.json") << R"({"val_loss": 1.)";
  const std::string e = error_of([&] { harness::read_cache_info(dir); });
  EXPECT_EQ(e.rfind(dir + "/info.json (a cache: delete its folder to build it again): not valid JSON (", 0), 0u) << e;
}

static std::vector<harness::Axis> two_axes() { return {{"task", {"t1", "t2"}}, {"model", {"m1", "m2"}}}; }

static std::string write(const std::string& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir + "/" + name) << text;
  return dir + "/" + name;
}

TEST(HarnessPreset, ResolutionOrderLaterAndMoreSpecificWin) {
  std::string d = dl::test::app_temp_dir("harness_preset");
  std::string p = write(d, "p.json", R"({"tasks": ["t1", "t2"], "models": ["m1"], "seeds": [3, 4],
      "defaults": {"steps": 1, "lr": 1, "name": "d"}, "tasks_cfg": {"t1": {"steps": 2, "lr": 2}},
      "models_cfg": {"m1": {"lr": 3}}, "cells_cfg": {"t1/m1": {"name": "cell"}, "t1": {"name": "task", "steps": 5}}})");
  harness::Preset pr = harness::load_preset(p, d, two_axes());
  EXPECT_EQ(pr.name, "p");
  EXPECT_EQ(pr.values, (std::vector<std::vector<std::string>>{{"t1", "t2"}, {"m1"}}));
  EXPECT_EQ(pr.seeds, (std::vector<int>{3, 4}));
  Cfg c = harness::resolve<Cfg>(pr, {"t1", "m1"}, {});
  EXPECT_EQ(c.steps, 5);      // cells_cfg "t1" over tasks_cfg
  EXPECT_EQ(c.lr, 3);         // models_cfg over tasks_cfg
  EXPECT_EQ(c.name, "cell");  // "t1/m1" (two parts) over "t1" (one)
  c = harness::resolve<Cfg>(pr, {"t2", "m1"}, {"lr=9"});
  EXPECT_EQ(c.steps, 1);
  EXPECT_EQ(c.lr, 9);  // --set last
  EXPECT_EQ(c.name, "d");
  // the file and the section are named in errors
  EXPECT_NE(error_of([&] {
              harness::resolve<Cfg>(pr, {"t1", "m1"}, {"name=1"});
            }).find("--set name=1: field 'name' must be a string"),
            std::string::npos);
  write(d, "typo.json", R"({"tasks": ["t1"], "models": ["m1"], "tasks_cfg": {"t3": {"steps": 2}}})");
  EXPECT_NE(error_of([&] { harness::load_preset("typo", d, two_axes()); }).find("tasks_cfg: unknown task 't3' (known: t1, t2)"),
            std::string::npos);
  write(d, "cells.json", R"({"tasks": ["t1"], "models": ["m1"], "cells_cfg": {"t1/m9": {"steps": 2}}})");
  EXPECT_NE(error_of([&] { harness::load_preset("cells", d, two_axes()); }).find("unknown model 'm9'"), std::string::npos);
  write(d, "top.json", R"({"tasks": ["t1"], "models": ["m1"], "regimes": ["x"]})");
  EXPECT_NE(error_of([&] { harness::load_preset("top", d, two_axes()); }).find("unknown top-level key 'regimes'"),
            std::string::npos);
  write(d, "val.json", R"({"tasks": ["t1"], "models": ["m3"]})");
  EXPECT_NE(error_of([&] { harness::load_preset("val", d, two_axes()); }).find("unknown model 'm3' (known: m1, m2)"),
            std::string::npos);
  write(d, "seeds.json", R"({"tasks": ["t1"], "models": ["m1"], "seeds": [1, "2"]})");
  EXPECT_NE(error_of([&] { harness::load_preset("seeds", d, two_axes()); }).find("'seeds' must hold integers"),
            std::string::npos);
  write(d, "bad.json", R"({"tasks": ["t1"],)");
  EXPECT_NE(error_of([&] { harness::load_preset("bad", d, two_axes()); }).find("bad.json: not valid JSON"), std::string::npos);
  EXPECT_NE(
      error_of([&] { harness::load_preset("nope", d, two_axes()); }).find("known presets: bad, cells, p, seeds, top, typo, val"),
      std::string::npos);
}

TEST(HarnessSeeds, ListsAndRanges) {
  EXPECT_EQ(harness::parse_seeds("0,1,2"), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(harness::parse_seeds("0-3"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(harness::parse_seeds("7,2-3"), (std::vector<int>{7, 2, 3}));
  for (std::string bad : {"", "a", "3-1", "1,,2", "1.5", "-2", "2-x", "0-4x", "1-2-3"})
    EXPECT_THROW(harness::parse_seeds(bad), ConfigError) << bad;
  // a seed twice would run one cell twice into one folder; a range is bounded (it is expanded into a list)
  EXPECT_EQ(error_of([] { harness::parse_seeds("0,1,0"); }), "--seeds '0,1,0': seed 0 is given twice");
  EXPECT_EQ(error_of([] { harness::parse_seeds("0-4,3"); }), "--seeds '0-4,3': seed 3 is given twice");
  EXPECT_EQ(error_of([] { harness::parse_seeds("0-2000000000"); }),
            "--seeds '0-2000000000': 0-2000000000 is 2000000001 seeds (at most 100000)");
}

// An app's first word that is no command is named with the commands there are (CLI11: "A subcommand is required").
TEST(HarnessConfig, AnUnknownCommandIsNamedWithTheKnownOnes) {
  CLI::App app("t");
  app.add_subcommand("run"), app.add_subcommand("cell");
  auto check = [&](std::vector<std::string> words) {
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    return harness::unknown_command(app, (int)argv.size(), argv.data());
  };
  EXPECT_EQ(check({"app", "rnu"}), "unknown command 'rnu' (known: run, cell)");
  EXPECT_EQ(check({"app", "run", "--seeds", "0"}), "");
  EXPECT_EQ(check({"app", "--help"}), "");
  EXPECT_EQ(check({"app"}), "");
}

TEST(HarnessSeeds, ARunFolderThatCannotBeMadeIsNamed) {
  EXPECT_EQ(error_of([] { harness::make_run_folder("/proc/no_such/run"); }),
            "--out /proc/no_such/run: cannot create the folder (No such file or directory)");
}

TEST(HarnessStats, StandardErrorsByHand) {
  // 0.30, 0.50, 0.70: mean 0.5, sample sd 0.2, se 0.2 / sqrt(3)
  harness::MeanSE m = harness::mean_se({0.3, 0.5, 0.7});
  EXPECT_NEAR(m.mean, 0.5, 1e-12);
  EXPECT_NEAR(m.se, 0.2 / std::sqrt(3.0), 1e-12);
  EXPECT_EQ(m.n, 3);
  EXPECT_NEAR(harness::binomial_se(0.4, 600), std::sqrt(0.4 * 0.6 / 600), 1e-15);
  harness::MeanSE one = harness::accuracy_mean_se({0.4}, 600);  // one seed: the binomial error of the split
  EXPECT_TRUE(one.binomial);
  EXPECT_NEAR(one.se, 0.02, 1e-12);
  // paired: differences 0.1, 0.3 -> mean 0.2, sd 0.1414, se 0.1
  harness::MeanSE d = harness::paired_difference({0.2, 0.4}, {0.3, 0.7}, 100);
  EXPECT_NEAR(d.mean, 0.2, 1e-12);
  EXPECT_NEAR(d.se, 0.1, 1e-12);
  harness::MeanSE d1 = harness::paired_difference({0.5}, {0.6}, 100);
  EXPECT_NEAR(d1.se, std::hypot(0.05, std::sqrt(0.6 * 0.4 / 100)), 1e-12);
  EXPECT_EQ(harness::format_mean_se(m), "50.0 ± 11.5");
  EXPECT_EQ(harness::format_mean_se(d, 100, 1, true), "+20.0 ± 10.0");
  EXPECT_EQ(harness::format_mean_se({}), "-");
}

// The one rule every app's table uses to tell an effect from noise (lra report, data-scale, pretrained_convs).
TEST(HarnessStats, BeyondTwoStandardErrors) {
  EXPECT_EQ(harness::beyond_two_se({0.05, 0.02, 3}), 1);    // 2.5 se above 0
  EXPECT_EQ(harness::beyond_two_se({-0.05, 0.02, 3}), -1);  // 2.5 se below
  EXPECT_EQ(harness::beyond_two_se({0.03, 0.02, 3}), 0);    // 1.5 se: noise
  EXPECT_EQ(harness::beyond_two_se({0.04, 0.02, 3}), 0);    // exactly 2 se is not beyond
  EXPECT_EQ(harness::beyond_two_se({0.01, 0.0, 3}), 1);     // three seeds that agree exactly
  EXPECT_EQ(harness::beyond_two_se({0.01, 0.0, 1}), 0);     // one value without an error: unknown
  EXPECT_EQ(harness::beyond_two_se({0.2, 0.05, 1, true}), 1);  // one seed with its binomial error
  EXPECT_EQ(harness::beyond_two_se({}), 0);
}

TEST(HarnessReport, TableMarkdownAndJson) {
  harness::Table t{"T", {"a", "b"}, {false, true}, {{"x", "1"}, {"y", "2"}}, {"note"}};
  EXPECT_EQ(t.markdown(), "# T\n\n| a | b |\n| --- | ---: |\n| x | 1 |\n| y | 2 |\n\nnote\n");
  EXPECT_EQ(t.to_json()["rows"][1][0], "y");
}

// ---- the training phase on a toy problem: y = class of the token sum, a linear model on token counts ----
namespace {

using Toy = test::ToyModel;

// One toy run in `dir`; `hook(step)` runs inside every loss call. Returns the final weights.
struct ToyRun {
  tasks::Dataset data = toy_data();
  Generator g{11};
  Toy m{g};
  optim::AdamW opt{m.parameters(), {}};
  tasks::Batcher batches;
  harness::PhaseParts parts;
  std::vector<harness::CurvePoint> curve;
  explicit ToyRun(int batch, bool shuffle = true) : batches(data, {batch, 5, shuffle, true}) {
    parts.model = &m, parts.opt = &opt, parts.batches = &batches, parts.rngs = {{"dropout", &g}};
    optim::ScheduleConfig sc;
    sc.kind = "warmup_cosine", sc.warmup = 2, sc.total = 12;
    parts.schedule = optim::make_schedule(sc);
  }
  harness::PhaseResult run(const harness::PhaseSpec& spec, const harness::RunContext& ctx, std::function<void(int)> hook = {}) {
    parts.loss = [this, hook](const tasks::Batch& b, const harness::Step& s) {
      if (hook) hook(s.step);
      return m.loss(b);
    };
    parts.eval = [] { return harness::EvalPoint{0.5, 0.25}; };
    return harness::run_phase(spec, parts, ctx, curve);
  }
  std::vector<float> weights() const {
    Tensor w = m.lin->weight.data().contiguous();
    return std::vector<float>(w.data<float>(), w.data<float>() + w.numel());
  }
};

harness::RunContext context(const std::string& dir, bool resume, int stop_after = -1) {
  harness::RunContext c;
  c.out = dir, c.dir = dir, c.label = "[toy]", c.quiet = true, c.resume = resume, c.stop_after = stop_after;
  return c;
}

const harness::PhaseSpec kSpec{"train", 12, 1, 1.0, 4, 5};

}  // namespace

TEST(HarnessPhase, AccumulatedMicroBatchesEqualOneBigBatch) {
  std::string d = dl::test::app_temp_dir("harness_accum");
  harness::PhaseSpec one{"train", 1, 1, 0.0, 0, 0}, two{"train", 1, 2, 0.0, 0, 0};
  ToyRun big(8, false), small(4, false);  // in dataset order: micro-batches 0-3 and 4-7 make the big one
  big.m.drop->p = small.m.drop->p = 0;
  big.parts.schedule = small.parts.schedule = optim::make_schedule({});  // constant: the warmup would start at lr 0
  // plain SGD: Adam's update hardly depends on the gradient's scale, so it would not see a missing 1/accum
  optim::SGD sgd_big(big.m.parameters(), {0.5}), sgd_small(small.m.parameters(), {0.5});
  big.parts.opt = &sgd_big, small.parts.opt = &sgd_small;
  big.run(one, context(d + "/big", false));
  small.run(two, context(d + "/small", false));
  std::vector<float> a = big.weights(), b = small.weights();
  for (size_t i = 0; i < a.size(); i++) EXPECT_NEAR(a[i], b[i], 1e-6) << i;
  ToyRun moved(8, false);
  EXPECT_NE(moved.weights(), a);  // the step did something
}

TEST(HarnessPhase, EvaluationsAndCheckpointsFollowTheirCadence) {
  std::string d = dl::test::app_temp_dir("harness_cadence");
  ToyRun r(8);
  r.run(kSpec, context(d, false));
  std::vector<int> steps;
  for (auto& p : r.curve) steps.push_back(p.step);
  EXPECT_EQ(steps, (std::vector<int>{4, 8, 12}));  // every 4 and the last
  EXPECT_EQ(r.curve[0].val_loss, 0.5);
  EXPECT_EQ(r.curve[0].accuracy, 0.25);
  EXPECT_EQ(optim::latest_checkpoint(d + "/train")->step, 12);
  std::ifstream csv(d + "/metrics.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header, "cell,phase,step,train_loss,val_loss,accuracy,lr");
}

TEST(HarnessPhase, KilledRunResumesBitIdentical) {
  std::string d = dl::test::app_temp_dir("harness_kill");
  ToyRun whole(8);
  whole.run(kSpec, context(d + "/whole", false));
  {
    ToyRun part(8);  // killed after 7 steps: the checkpoint at 5 is what survives
    EXPECT_THROW(part.run(kSpec, context(d + "/part", false, 7)), harness::Interrupted);
    EXPECT_EQ(optim::latest_checkpoint(d + "/part/train")->step, 5);
  }
  ToyRun resumed(8);  // a fresh process: new model, optimizer and batcher
  harness::PhaseResult r = resumed.run(kSpec, context(d + "/part", true));
  EXPECT_EQ(r.start, 5);
  EXPECT_EQ(resumed.weights(), whole.weights());
  ASSERT_EQ(resumed.curve.size(), whole.curve.size());
  for (size_t i = 0; i < whole.curve.size(); i++) EXPECT_EQ(resumed.curve[i].train_loss, whole.curve[i].train_loss);
}

TEST(HarnessPhase, SigintWritesACheckpointAndResumesBitIdentical) {
  std::string d = dl::test::app_temp_dir("harness_sigint");
  ToyRun whole(8);
  whole.run(kSpec, context(d + "/whole", false));
  harness::install_stop_handlers();
  {
    ToyRun part(8);  // a real SIGINT during step 6 (0-based): the phase finishes the step, saves at 7 and stops
    std::string msg = error_of([&] {
      part.run(kSpec, context(d + "/part", false), [](int step) {
        if (step == 6) std::raise(SIGINT);
      });
    });
    EXPECT_NE(msg.find("interrupted at step 7 of 12"), std::string::npos) << msg;
    EXPECT_EQ(optim::latest_checkpoint(d + "/part/train")->step, 7);
  }
  EXPECT_TRUE(harness::stop_requested());
  harness::clear_stop_request();
  ToyRun resumed(8);
  EXPECT_EQ(resumed.run(kSpec, context(d + "/part", true)).start, 7);
  EXPECT_EQ(resumed.weights(), whole.weights());
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

TEST(HarnessPhase, DamagedCheckpointsFallBackToThePreviousOneOrStartAgain) {
  std::string d = dl::test::app_temp_dir("harness_fallback");
  ToyRun whole(8);
  whole.run(kSpec, context(d + "/whole", false));
  {
    ToyRun part(8);  // killed after 11 steps: checkpoints at 5 and 10 are kept
    EXPECT_THROW(part.run(kSpec, context(d + "/part", false, 11)), harness::Interrupted);
  }
  auto h = optim::checkpoint_history(d + "/part/train");
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].step, 10);
  EXPECT_EQ(h[1].step, 5);
  std::filesystem::resize_file(h[0].model_path, 100);  // the newest model file truncated (a disk fault)
  ToyRun resumed(8);
  harness::PhaseResult r = resumed.run(kSpec, context(d + "/part", true));
  EXPECT_EQ(r.start, 5) << "the damaged checkpoint of step 10 must be skipped for the one of step 5";
  EXPECT_EQ(resumed.weights(), whole.weights()) << "resuming from the older checkpoint still ends bit-identical";
  // with every kept checkpoint damaged, nothing intact is left to lose: the resume starts the phase again from step 0
  // (ending where an uninterrupted run ends) and keeps the damaged files in a folder that says so
  {
    ToyRun part(8);
    EXPECT_THROW(part.run(kSpec, context(d + "/both", false, 11)), harness::Interrupted);
  }
  const auto both = optim::checkpoint_history(d + "/both/train");
  for (auto& c : both) std::filesystem::resize_file(c.state_path, 10);
  ToyRun again(8);
  harness::PhaseResult r2 = again.run(kSpec, context(d + "/both", true));
  EXPECT_EQ(r2.start, 0);
  EXPECT_EQ(again.weights(), whole.weights()) << "a fresh start ends where an uninterrupted run ends";
  std::vector<std::string> aside;
  for (auto& e : std::filesystem::directory_iterator(d + "/both/train"))
    if (e.path().filename().string().rfind("damaged_", 0) == 0) aside.push_back(e.path().string());
  ASSERT_EQ(aside.size(), 1u) << "one folder of damaged files";
  for (auto& c : both) {
    EXPECT_TRUE(std::filesystem::exists(aside[0] + "/" + std::filesystem::path(c.state_path).filename().string()));
    EXPECT_TRUE(std::filesystem::exists(aside[0] + "/" + std::filesystem::path(c.model_path).filename().string()));
  }
  EXPECT_TRUE(std::filesystem::exists(aside[0] + "/checkpoint.json"));
  EXPECT_EQ(optim::latest_checkpoint(d + "/both/train")->step, 12) << "the new run's own checkpoint";
}

TEST(HarnessPhase, NonFiniteLossStopsBeforeTheUpdateNamingTheStep) {
  std::string d = dl::test::app_temp_dir("harness_nan");
  ToyRun r(8);
  std::vector<float> before;
  r.parts.loss = [&](const tasks::Batch& b, const harness::Step& s) {
    if (s.step == 6) before = r.weights();
    Var l = r.m.loss(b);
    return s.step == 6 ? l * std::numeric_limits<double>::quiet_NaN() : l;
  };
  std::string msg = error_of([&] { harness::run_phase(kSpec, r.parts, context(d, false), r.curve); });
  EXPECT_NE(msg.find("the loss is"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nan at step 6"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the last checkpoint (step 5"), std::string::npos) << msg;
  EXPECT_EQ(r.weights(), before) << "no update may be applied with a NaN loss";
}

// A finite loss with a NaN gradient (sqrt at 0 in the backward: 0 * inf) at step 9, whose update would be saved in
// the checkpoint of step 10: the phase stops before the update, names the parameter, and step 5's checkpoint stays
// the newest, with finite weights.
TEST(HarnessPhase, NonFiniteGradientWithAFiniteLossStopsBeforeTheUpdate) {
  std::string d = dl::test::app_temp_dir("harness_nan_grad");
  ToyRun r(8);
  std::vector<float> before;
  r.parts.loss = [&](const tasks::Batch& b, const harness::Step& s) {
    Var l = r.m.loss(b);
    if (s.step != 9) return l;
    before = r.weights();
    return l + sqrt(sum(r.m.lin->weight) * 0.0) * 0.0;  // adds 0 to the loss, NaN to the weight's gradient
  };
  std::string msg = error_of([&] { harness::run_phase(kSpec, r.parts, context(d, false), r.curve); });
  EXPECT_NE(msg.find("step 9: the loss is finite"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a gradient is not: lin.weight: NaN at element 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the last checkpoint (step 5"), std::string::npos) << msg;
  EXPECT_EQ(r.weights(), before) << "no update may be applied with a NaN gradient";
  EXPECT_EQ(optim::latest_checkpoint(d + "/train")->step, 5) << "no checkpoint may be written after the bad step";
}

TEST(HarnessPhase, ProfileTimesTheThirdStepOpByOpAndChangesNothing) {
  std::string d = dl::test::app_temp_dir("harness_profile");
  ToyRun plain(8), profiled(8);
  plain.run(kSpec, context(d + "/plain", false));
  harness::RunContext c = context(d + "/profiled", false);
  c.profile = true;
  std::vector<int> steps_profiled;
  profiled.run(kSpec, c, [&](int step) {
    if (profiling()) steps_profiled.push_back(step);
  });
  EXPECT_EQ(steps_profiled, std::vector<int>{2});
  EXPECT_FALSE(profiling());
  EXPECT_EQ(profiled.weights(), plain.weights()) << "profiling changes no number";
  std::ifstream f(d + "/profiled/profile_train.md");
  ASSERT_TRUE(f.good()) << "no profile_train.md";
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  for (const char* part : {"[toy] train, step 3", "| linear |", "| cross_entropy |", "| accumulate_grad |", "ops; forward ",
                           "Optimizer update"})
    EXPECT_NE(text.find(part), std::string::npos) << part << " in\n" << text;
  EXPECT_FALSE(std::filesystem::exists(d + "/plain/profile_train.md"));
}

TEST(HarnessRun, ASecondRunIntoTheSameFolderIsRefused) {
  std::string d = dl::test::app_temp_dir("harness_lock");
  {
    harness::RunLock a(d);
    EXPECT_TRUE(std::filesystem::exists(d + "/.lock"));
    harness::RunLock nested(d);  // the same process may nest
  }
  EXPECT_FALSE(std::filesystem::exists(d + "/.lock")) << "released at the end";
  std::ofstream(d + "/.lock") << "1\n";  // pid 1 is alive: another run holds the folder
  std::string msg = error_of([&] { harness::RunLock b(d); });
  EXPECT_NE(msg.find("is in use by another run (pid 1"), std::string::npos) << msg;
  std::ofstream(d + "/.lock") << "999999999\n";  // no such process: a stale lock is taken over
  EXPECT_NO_THROW(harness::RunLock c(d));
  // an exited process not yet reaped (a zombie: a rank ended by MPI_Abort after its mpirun was gone) holds nothing
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  for (int i = 0; i < 200; i++) {  // until it has exited (and, unreaped, is a zombie)
    std::ifstream st("/proc/" + std::to_string(child) + "/stat");
    std::string line;
    std::getline(st, line);
    if (line.find(") Z") != std::string::npos) break;
    ::usleep(10000);
  }
  std::ofstream(d + "/.lock") << child << "\n";
  EXPECT_NO_THROW(harness::RunLock z(d)) << "a zombie's lock is stale";
  ::waitpid(child, nullptr, 0);
}
