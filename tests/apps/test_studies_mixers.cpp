// tests/apps/test_studies_mixers.cpp - `studies mixers` (apps/studies/mixers.h): every mixer's model has the
// parameter count of a hand computation on a tiny config, the FFN widths bring every mixer within the stated
// tolerance of the attention model, the token MLP mixes along positions and ignores padding, the step-time
// measurement is positive; as an experiment on the harness: a miniature sweep writes a row per task x mixer with the
// lr chosen on validation, the sweep table and the plots; a sweep killed twice and resumed gives the uninterrupted
// one's results and table; the executable runs the old command line and --jobs 2; bad settings are named.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "app_test_util.h"
#include "apps/common/results.h"
#include "apps/studies/cli.h"
#include "apps/studies/mixers.h"

using namespace studies;
namespace harness = dl::harness;
using json = nlohmann::json;

namespace {

using dl::test::quiet_in;

// A tiny config: V 11, classes 3, max_len 8, D 8, 2 layers, F 12, 2 heads, N 4 (2 modes), K 3, token width 5.
MixerNetConfig tiny(const std::string& mixer) {
  MixerNetConfig c;
  c.mixer = mixer, c.vocab = 11, c.classes = 3, c.max_len = 8;
  c.d_model = 8, c.layers = 2, c.ffn_hidden = 12, c.heads = 2, c.d_state = 4, c.kernel_size = 3, c.token_hidden = 5;
  return c;
}

// The counts from the shapes the layer headers give (D = 8, L = 8, F = 12, heads 2, K 3, N 4, t 5).
int64_t hand_count(const std::string& mixer) {
  const int64_t D = 8, L = 8, F = 12, h = 2, K = 3, N = 4, t = 5, V = 11, classes = 3, layers = 2;
  int64_t m = 0;
  if (mixer == "attention") m = 4 * D * D + 4 * D;              // in_proj (3D, D) + 3D, out_proj D x D + D
  if (mixer == "mixer") m = 2 * L * t + t + L;                  // fc1 (t, L) + t, fc2 (L, t) + L
  if (mixer == "fnet") m = 0;                                   // a fixed DFT
  if (mixer == "s4d") m = 2 * D * D + 4 * D + 4 * D * N;        // dt, A (2 parts), B, C (2 directions), D, GLU out
  if (mixer == "lightconv") m = 3 * D * D + 3 * D + h * K;      // W_in (2D, D), W_out (D, D), kernel (h, 1, K)
  if (mixer == "dynamicconv") m = 3 * D * D + 3 * D + (D + 1) * h * K;  // kernel predicted by Linear(D, h K)
  const int64_t block = 4 * D + (D * F + F + F * D + D);                 // two LayerNorms, the FFN
  return V * D + L * D + layers * (m + block) + 2 * D + D * classes + classes;  // embed, positions, final norm, head
}

}  // namespace

TEST(StudiesMixers, ParameterCountsMatchAHandCount) {
  for (const std::string& mixer : kMixers) EXPECT_EQ(count_parameters(tiny(mixer)), hand_count(mixer)) << mixer;
  EXPECT_THROW(count_parameters(tiny("gru")), std::invalid_argument);
}

TEST(StudiesMixers, MatchedFfnWidthsBringEveryMixerWithinHalfAUnit) {
  // The study's default shape (D 64, 2 layers, ListOps-sized vocab and length): the reference is attention with F = 2D.
  MixerNetConfig ref = tiny("attention");
  ref.vocab = 20, ref.classes = 10, ref.max_len = 128, ref.d_model = 64, ref.heads = 4, ref.d_state = 32;
  ref.kernel_size = 15, ref.token_hidden = 32, ref.ffn_hidden = 128;
  const int64_t target = count_parameters(ref), unit = ref.layers * (2 * ref.d_model + 1);
  for (const std::string& mixer : kMixers) {
    MixerNetConfig c = ref;
    c.mixer = mixer;
    c.ffn_hidden = matched_ffn_hidden(c, target);
    const int64_t p = count_parameters(c);
    EXPECT_LE(std::llabs(p - target), unit / 2 + 1) << mixer << ": F " << c.ffn_hidden << ", " << p << " vs " << target;
    if (mixer == "fnet") {
      EXPECT_GT(c.ffn_hidden, 128) << "FNet has no mixer parameters: the widest FFN";
    }
  }
  EXPECT_EQ(matched_ffn_hidden(ref, target), 128) << "the reference matches itself";
}

TEST(StudiesMixers, TokenMlpMixesPositionsAndIgnoresPadding) {
  dl::Generator g(3);
  TokenMlp tm(6, 4, g);
  dl::Tensor x = dl::randn({1, 4, 3}, g), mask = dl::ones({1, 4});
  mask.data<float>()[3] = 0;  // the last of 4 positions is padding
  auto run = [&](const dl::Tensor& in) {  // y (1, 4, 3) as a contiguous row-major vector
    dl::Tensor y = tm.forward(dl::Var(in), mask).data().contiguous();
    EXPECT_EQ(y.shape(), (dl::Shape{1, 4, 3}));
    return std::vector<float>(y.data<float>(), y.data<float>() + 12);
  };
  const std::vector<float> y = run(x);
  dl::Tensor x2 = x.clone();
  x2.data<float>()[3 * 3 + 1] += 5;  // the padded position's input
  const std::vector<float> y2 = run(x2);
  for (int i = 0; i < 12; i++) EXPECT_FLOAT_EQ(y[i], y2[i]) << "padding reached output " << i;
  dl::Tensor x3 = x.clone();
  x3.data<float>()[0] += 1;  // position 0, channel 0
  const std::vector<float> y3 = run(x3);
  EXPECT_NE(y[2 * 3 + 0], y3[2 * 3 + 0]) << "position 0 reaches position 2 (mixing along L)";
  EXPECT_FLOAT_EQ(y[2 * 3 + 1], y3[2 * 3 + 1]) << "channels do not mix";
}

TEST(StudiesMixers, StepTimeIsPositiveForEveryMixer) {
  for (const std::string& mixer : kMixers) {
    double ms = train_step_ms(tiny(mixer), 2, 8, 0, 1);
    EXPECT_GT(ms, 0) << mixer;
    EXPECT_LT(ms, 10000) << mixer;
  }
}

// ---- the study on the harness -------------------------------------------------------------------------------------
namespace {

// A miniature preset: ListOps at length 32, 8 steps, an evaluation every 2; the sweep at L 16 and 32.
std::string mini_preset(const std::string& dir, const std::vector<std::string>& mixers, const std::vector<std::string>& lrs) {
  json p = {{"description", "test"}, {"tasks", {"listops"}}, {"mixers", mixers}, {"lrs", lrs}, {"seeds", {0, 1}},
            {"defaults", {{"seq_len", 32}, {"steps", 8}, {"eval_every", 2}, {"d_model", 16}, {"heads", 2}, {"d_state", 4},
                          {"kernel_size", 3}, {"token_hidden", 4}, {"batch", 8}, {"train_size", 64}, {"val_size", 32},
                          {"test_size", 32}, {"sweep_from", 16}, {"sweep_to", 32}, {"sweep_batch", 2}}}};
  const std::string path = dir + "/mini.json";
  std::ofstream(path) << p.dump(2);
  return path;
}

json results(const std::string& out) { return json::parse(harness::read_text(out + "/results.json")); }

}  // namespace

TEST(StudiesMixers, MiniatureSweepWritesEveryRowTheChosenLrTheSweepAndPlots) {
  const std::string d = dl::test::app_temp_dir("studies_mixers");
  const harness::Experiment e = mixers_experiment();
  const harness::Preset p = harness::load_preset(mini_preset(d, kMixers, {"0.002", "0.02"}), e.presets_dir,
                                                 std::vector<harness::Axis>(e.axes.begin(), e.axes.end()));
  harness::run_cells(e, p, harness::expand_cells(e, p, p.values, p.seeds, {}), quiet_in(d + "/out"));
  harness::write_reports(e, p, d + "/out");
  const json j = results(d + "/out");
  ASSERT_EQ(j["cells"].size(), kMixers.size() * 2 * 2);
  const json& rows = j["table"]["rows"];
  ASSERT_EQ(rows.size(), kMixers.size());
  for (size_t i = 0; i < kMixers.size(); i++) {
    EXPECT_EQ(rows[i][1], kMixers[i]) << "the preset's order";
    std::map<std::string, double> mean_val;  // the lr with the best mean validation accuracy over the two seeds
    for (auto& c : j["cells"])
      if (c["axes"]["mixer"] == kMixers[i]) mean_val[c["axes"]["lr"]] += c["metrics"]["val_acc"].get<double>() / 2;
    const std::string chosen = mean_val["0.02"] > mean_val["0.002"] ? "0.0200" : "0.0020";
    EXPECT_EQ(rows[i][4], chosen) << kMixers[i];
  }
  for (auto& c : j["cells"]) {
    EXPECT_GT(c["metrics"]["ms_per_step"].get<double>(), 0);
    EXPECT_EQ(c["extra"]["sweep"].size(), 2u) << "L 16 and 32";
    EXPECT_TRUE(std::filesystem::exists(d + "/out/cells/" + c["cell"].get<std::string>() + "/model.safetensors"));
    EXPECT_FALSE(std::filesystem::exists(d + "/out/cells/" + c["cell"].get<std::string>() + "/train")) << "checkpoints removed";
  }
  const std::string md = harness::read_text(d + "/out/results.md");
  EXPECT_NE(md.find("Training step time against length"), std::string::npos) << md;
  EXPECT_NE(md.find("| listops | dynamicconv |"), std::string::npos) << md;
  for (const char* plot : {"accuracy", "time_vs_length", "accuracy_vs_time"})
    EXPECT_TRUE(std::filesystem::exists(d + "/out/plots/" + std::string(plot) + ".dat")) << plot;
}

// Killed (as a SIGKILL would, no checkpoint at the kill) inside the first cell and again inside the third, resumed each
// time: every cell's accuracies, curve and validation-selected model equal the uninterrupted sweep's, and so does the
// table (the timing columns aside).
TEST(StudiesMixers, AKilledSweepResumesToTheUninterruptedResultsAndTable) {
  const std::string d = dl::test::app_temp_dir("studies_mixers_resume");
  const harness::Experiment e = mixers_experiment();
  const harness::Preset p = harness::load_preset(mini_preset(d, {"attention", "s4d"}, {"0.01"}), e.presets_dir,
                                                 std::vector<harness::Axis>(e.axes.begin(), e.axes.end()));
  const std::vector<harness::Cell> cells = harness::expand_cells(e, p, p.values, p.seeds, {"eval_every=1"});
  harness::run_cells(e, p, cells, quiet_in(d + "/whole"));
  dl::test::run_sweep_stopped_twice(e, p, cells, d + "/part");  // stopped at step 5 (checkpoint 4), then in the third cell
  const json whole = json::parse(harness::read_text(d + "/whole/results.json"));
  const json resumed = json::parse(harness::read_text(d + "/part/results.json"));
  ASSERT_EQ(whole["cells"].size(), 4u);
  ASSERT_EQ(resumed["cells"].size(), 4u);
  for (size_t i = 0; i < 4; i++) {
    const json &a = whole["cells"][i], &b = resumed["cells"][i];
    SCOPED_TRACE(a["cell"].get<std::string>());
    EXPECT_EQ(a["metrics"]["val_acc"], b["metrics"]["val_acc"]);
    EXPECT_EQ(a["metrics"]["test_acc"], b["metrics"]["test_acc"]);
    EXPECT_EQ(a["params"], b["params"]);
    EXPECT_EQ(a["curve"], b["curve"]);
    dl::test::expect_identical_weights(d + "/whole/cells/" + a["cell"].get<std::string>() + "/model.safetensors",
                                       d + "/part/cells/" + b["cell"].get<std::string>() + "/model.safetensors");
  }
  const json &ta = whole["table"]["rows"], &tb = resumed["table"]["rows"];
  ASSERT_EQ(ta.size(), 2u);
  ASSERT_EQ(tb.size(), 2u);
  for (size_t r = 0; r < 2; r++)
    for (size_t c = 0; c < 7; c++) EXPECT_EQ(ta[r][c], tb[r][c]) << "row " << r << " column " << c;  // 7, 8: the timings
  EXPECT_NE(harness::read_text(d + "/part/results.md").find("Training step time against length"), std::string::npos);
}

TEST(StudiesMixers, TheOldCommandLineIsReadAsBefore) {
  using V = std::vector<std::string>;
  const LegacyFlags& f = mixers_legacy_flags();
  EXPECT_EQ(legacy_args({"run", "--seeds", "3"}, f), (V{"run", "--seeds", "3"})) << "with run: the harness's flags";
  EXPECT_EQ(legacy_args({"--mixers", "attention", "--seeds", "3", "--steps", "40", "--lengths", "64,128,256"}, f),
            (V{"run", "--mixers", "attention", "--seeds", "0-2", "--set", "steps=40", "--set", "sweep_from=64", "--set",
               "sweep_to=256"}));
  EXPECT_EQ(legacy_args({"--seeds=1", "--quiet"}, f), (V{"run", "--seeds", "0", "--quiet"}));
  EXPECT_EQ(legacy_args({"--seeds", "0,2"}, f), (V{"run", "--seeds", "0,2"})) << "a list stays a list";
  EXPECT_THROW(legacy_args({"--lengths", "128,300"}, f), harness::ConfigError);
  EXPECT_ANY_THROW(legacy_args({"--lengths", "128,x"}, f));
}

TEST(StudiesMixers, BadSettingsAreNamed) {
  const harness::Experiment e = mixers_experiment();
  const harness::Preset p =
      harness::load_preset("default", e.presets_dir, std::vector<harness::Axis>(e.axes.begin(), e.axes.end()));
  auto error = [&](const std::vector<std::string>& values, const std::vector<std::string>& sets) {
    return dl::test::error_of([&] { harness::expand_cells(e, p, {{values[0]}, {values[1]}, {values[2]}}, {0}, sets); });
  };
  EXPECT_NE(error({"listops", "s4d", "fast"}, {}).find("lr 'fast'"), std::string::npos);
  EXPECT_NE(error({"listops", "s4d", "-0.1"}, {}).find("positive"), std::string::npos);
  EXPECT_NE(error({"listops", "s4d", "0.002"}, {"lr=0.1"}).find("--lrs"), std::string::npos);
  EXPECT_NE(error({"listops", "s4d", "0.002"}, {"steps=0"}).find("'steps'"), std::string::npos);
  EXPECT_NE(error({"listops", "s4d", "0.002"}, {"sweep_from=256", "sweep_to=128"}).find("sweep_from"), std::string::npos);
  EXPECT_NE(error({"listops", "s4d", "0.002"}, {"width=3"}).find("width"), std::string::npos);
  EXPECT_EQ(error({"listops", "s4d", "0.002"}, {"sweep_to=0"}), "") << "no sweep is allowed";
  EXPECT_NE(harness::load_preset("large", e.presets_dir, p.axes).values[2].size(), 1u) << "large chooses the lr";
}

// The executable: the old command line (an option first, --seeds as a count) and `run --jobs 2` (workers started as
// `studies mixers run ... --worker k`, Experiment::command) give the same accuracies.
TEST(StudiesMixers, TheExecutableRunsTheOldCommandLineAndJobs) {
  const std::string d = dl::test::app_temp_dir("studies_mixers_exe");
  const std::string exe = std::string(DL_BINARY_DIR) + "/studies mixers ", preset = mini_preset(d, {"fnet", "mixer"}, {"0.002"});
  const std::string common = " --preset " + preset + " --quiet --threads 1 --set sweep_to=0 --out " + d;
  ASSERT_EQ(std::system((exe + "--seeds 1 --steps 4" + common + "/old > " + d + "/old.log 2>&1").c_str()), 0)
      << harness::read_text(d + "/old.log");
  ASSERT_EQ(std::system((exe + "run --seeds 0 --set steps=4 --jobs 2" + common + "/jobs > " + d + "/jobs.log 2>&1").c_str()), 0)
      << harness::read_text(d + "/jobs.log");
  const json a = results(d + "/old"), b = results(d + "/jobs");
  ASSERT_EQ(a["cells"].size(), 2u) << "seed 0 only";
  ASSERT_EQ(b["cells"].size(), 2u);
  for (size_t i = 0; i < 2; i++) {
    EXPECT_EQ(a["cells"][i]["config"]["steps"], 4);
    EXPECT_EQ(a["cells"][i]["metrics"]["test_acc"], b["cells"][i]["metrics"]["test_acc"]);
  }
  EXPECT_NE(std::system((exe + "--lengths 100,300" + common + "/bad > " + d + "/bad.log 2>&1").c_str()), 0);
  EXPECT_NE(harness::read_text(d + "/bad.log").find("--lengths"), std::string::npos);
}
