// tests/apps/test_studies_init_warmup.cpp - `studies init-warmup` (apps/studies/init_warmup.h): the per-layer gradient
// norm it reports is the norm of the true gradient (central differences on a float64 2-layer post-LN model), the
// layer placement it compares behaves as the study says (pre-LN's input-side layers get the larger share of the
// gradient, post-LN's do not); as an experiment on the harness: bad settings are named, the old command line is read
// as before, a miniature run writes its tables and plots, and a run killed twice resumes to the uninterrupted one's.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "app_test_util.h"
#include "apps/common/results.h"
#include "apps/studies/cli.h"
#include "apps/studies/init_warmup.h"
#include "tasks/objectives.h"

using namespace studies;
using namespace dl;

namespace {

using dl::test::quiet_in;

// A few hundred bytes of English, repeated with a counter so no two windows are identical.
std::string english_text(int repeats) {
  std::string s;
  for (int i = 0; i < repeats; i++)
    s += "The committee met on day " + std::to_string(i) +
         " and agreed that the report, which had been read by every member, should be sent to the governor at once. ";
  return s;
}

void to_f64(nn::Module& m) {
  for (auto& [n, p] : m.named_parameters()) p.mutable_data() = p.data().to(DType::f64);
}

double mean_ratio(bool norm_first, const LmBatch& b) {
  double s = 0;
  for (int seed = 0; seed < 3; seed++) {
    ByteLmConfig c;
    c.d_model = 32, c.heads = 4, c.dim_ff = 128, c.max_len = 32, c.depth = 10, c.norm_first = norm_first, c.init = "lecun";
    Generator g(100 + seed);
    ByteLm m(c, g);
    std::vector<double> n = layer_grad_norms(m, b);
    s += n.front() / n.back();
  }
  return s / 3;
}

}  // namespace

// The measurement against a hand computation: for each of the two layers of a tiny post-LN model in float64, the
// gradient of the loss with respect to every parameter element by central differences, then its 2-norm.
TEST(StudiesInitWarmup, LayerGradNormsMatchFiniteDifferences) {
  ByteLmConfig c;
  c.d_model = 4, c.heads = 2, c.dim_ff = 8, c.max_len = 3, c.depth = 2, c.norm_first = false, c.init = "lecun";
  c.causal = false;  // BERT's bidirectional attention; the batch is a masked one
  Generator g(7);
  ByteLm m(c, g);
  to_f64(m);
  const int64_t I = tasks::kIgnoreIndex;
  LmBatch b{from_vector(std::vector<int64_t>{5, 256, 7, 256, 9, 11}, {2, 3}),
             from_vector(std::vector<int64_t>{I, 6, I, 10, I, I}, {2, 3})};
  layer_grad_norms(m, b);  // a first call: the second must not add onto its gradients
  const std::vector<double> analytic = layer_grad_norms(m, b);
  ASSERT_EQ(analytic.size(), 2u);
  const double eps = 1e-6;
  for (size_t l = 0; l < 2; l++) {
    double fd_sq = 0, max_elem_err = 0;
    for (const auto& [name, p] : m.layers->items()[l]->named_parameters()) {
      double* v = p.mutable_data().data<double>();
      const double* an = p.grad().contiguous().data<double>();
      for (int64_t i = 0; i < p.data().numel(); i++) {
        const double v0 = v[i];
        NoGradGuard ng;
        v[i] = v0 + eps;
        const double up = lm_loss(m, b).item();
        v[i] = v0 - eps;
        const double down = lm_loss(m, b).item();
        v[i] = v0;
        const double fd = (up - down) / (2 * eps);
        fd_sq += fd * fd;
        max_elem_err = std::max(max_elem_err, std::abs(fd - an[i]));
      }
    }
    const double fd_norm = std::sqrt(fd_sq);
    EXPECT_GT(fd_norm, 1e-3) << "layer " << l << ": a gradient too small to test anything";
    EXPECT_NEAR(analytic[l], fd_norm, 1e-6 * fd_norm) << "layer " << l;
    EXPECT_LT(max_elem_err, 1e-7) << "layer " << l << ": element-wise, not only in norm";
  }
}

// What the study's plots show: in a pre-LN stack the input-side layer gets several times the gradient of the
// output-side one (every later branch adds a path back to it, through LayerNorms that amplify a small residual
// stream), while post-LN re-normalises the stream after every sublayer and its input-side layer gets no more than
// the output-side one. Swapping the placement (norm_first) swaps the two and fails here.
TEST(StudiesInitWarmup, PostLnGradientShrinksTowardTheInputComparedWithPreLn) {
  const LmBatch b = lm_batch(english_text(30), 8, 32, "causal", 3);
  const double post = mean_ratio(false, b), pre = mean_ratio(true, b);
  // measured: post 0.89, pre 3.66 (depth 10, N(0, 1/fan_in), 3 seeds); wired the other way they swap
  EXPECT_LT(post, 1.0) << "post-LN first/last layer gradient ratio";
  EXPECT_GT(pre, 2.5) << "pre-LN first/last layer gradient ratio";
  EXPECT_GT(pre, 2.5 * post);
}

// ---- the study on the harness -------------------------------------------------------------------------------------
namespace {

namespace harness = dl::harness;
using json = nlohmann::json;

// A miniature preset on a small English text: (a) at depths 2, 3 and inits 0.02, xavier; (b)-(d) depth 2, 4 steps
// (warmup 2), a curve point every 2; the default preset's arms; 2 seeds.
harness::Preset mini_preset(const std::string& dir, const std::vector<std::string>& arms) {
  harness::write_text_atomic(dir + "/text.txt", english_text(20));
  const harness::Experiment e = init_warmup_experiment();
  const harness::Preset d = harness::load_preset("default", e.presets_dir, std::vector<harness::Axis>(e.axes.begin(), e.axes.end()));
  json p = {{"description", "test"}, {"norms", {"post", "pre"}}, {"arms", arms}, {"seeds", {0, 1}},
            {"defaults", {{"depths", "2,3"}, {"inits", "0.02,xavier"}, {"depth", 2}, {"steps", 4}, {"warmup", 2},
                          {"eval_every", 2}, {"eval_batches", 1}, {"d_model", 16}, {"heads", 2}, {"batch", 2},
                          {"seq_len", 16}, {"text", dir + "/text.txt"}}},
            {"arms_cfg", d.raw["arms_cfg"]}};
  harness::write_text_atomic(dir + "/mini.json", p.dump(2));
  return harness::load_preset(dir + "/mini.json", e.presets_dir, d.axes);
}

}  // namespace

TEST(StudiesInitWarmup, RefusesBadSettingsByName) {
  Generator g(1);
  nn::Linear lin(3, 3, g);
  EXPECT_NE(test::error_of([&] { init_parameters(lin, "he", g); }).find("unknown init 'he'"), std::string::npos);
  EXPECT_NE(test::error_of([&] { lm_batch(english_text(2), 1, 16, "span", 0); }).find("unknown objective 'span'"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { lm_batch("short", 1, 16, "causal", 0); }).find("fewer than T + 2"), std::string::npos);
  const harness::Experiment e = init_warmup_experiment();
  const harness::Preset p = harness::load_preset("default", e.presets_dir, std::vector<harness::Axis>(e.axes.begin(), e.axes.end()));
  auto error = [&](const std::string& arm, const std::vector<std::string>& sets) {
    return test::error_of([&] { harness::expand_cells(e, p, {{"post"}, {arm}}, {0}, sets); });
  };
  EXPECT_EQ(error("warmup", {}), "") << "the default preset is valid";
  EXPECT_NE(error("warmup", {"inits=0.02,kaiming"}).find("field 'inits': 'kaiming' in \"0.02,kaiming\" is not one of"),
            std::string::npos);
  EXPECT_NE(error("warmup", {"init=he"}).find("post/warmup: field 'init': 'he' is not one of 0.02, lecun, xavier"),
            std::string::npos);
  EXPECT_NE(error("warmup", {"depths=2,x"}).find("'depths'"), std::string::npos);
  EXPECT_NE(error("warmup", {"warmup=100"}).find("field 'warmup' 100 must be in [0, steps 100)"), std::string::npos);
  EXPECT_NE(error("warmup", {"schedule=cosine"}).find("'schedule'"), std::string::npos);
  EXPECT_NE(error("warmup", {"heads=3"}).find("not a multiple of heads 3"), std::string::npos);
  EXPECT_NE(error("warmup", {"norm=pre"}).find("--norms"), std::string::npos) << "an axis";
  EXPECT_NE(error("kaiming", {}).find("unknown arm 'kaiming'"), std::string::npos);
  for (const char* name : {"default", "large", "xl"}) EXPECT_NO_THROW(harness::load_preset(name, e.presets_dir, p.axes)) << name;
  const std::string d = dl::test::app_temp_dir("studies_iw_bad");
  const std::vector<harness::Cell> cells =
      harness::expand_cells(e, p, {{"post"}, {"init-grads"}}, {0}, {"text=\"" + d + "/missing.txt\""});
  EXPECT_NE(test::error_of([&] { harness::run_cells(e, p, cells, quiet_in(d + "/out")); }).find("missing.txt"),
            std::string::npos);
}

TEST(StudiesInitWarmup, TheOldCommandLineIsReadAsBefore) {
  using V = std::vector<std::string>;
  const LegacyFlags& f = init_warmup_legacy_flags();
  EXPECT_EQ(legacy_args({"--seeds", "2", "--train-depth", "4", "--depths", "2,4", "--lrs", "0.001", "--large"}, f),
            (V{"run", "--seeds", "0-1", "--set", "depth=4", "--set", "depths=\"2,4\"", "--set", "lr=0.001", "--preset", "xl"}));
  EXPECT_EQ(legacy_args({"--no-train", "--objective=mlm"}, f), (V{"run", "--arms", "init-grads", "--set", "objective=\"mlm\""}));
  EXPECT_EQ(legacy_args({"--lrs", "0.002,0.004"}, f), (V{"run", "--set", "lr=0.002", "--set", "lr_factor=2.0"}));
  EXPECT_THROW(legacy_args({"--lrs", "1,2,3"}, f), harness::ConfigError);
}

TEST(StudiesInitWarmup, MiniatureRunWritesItsTables) {
  const std::string d = dl::test::app_temp_dir("studies_iw");
  const harness::Experiment e = init_warmup_experiment();
  const harness::Preset p = mini_preset(d, harness::load_preset("default", e.presets_dir, {{"norm", {}}, {"arm", {}}}).values[1]);
  harness::run_cells(e, p, harness::expand_cells(e, p, p.values, p.seeds, {}), quiet_in(d + "/out"));
  harness::write_reports(e, p, d + "/out");
  const std::string md = harness::read_text(d + "/out/results.md");
  EXPECT_NE(md.find("| 3 | pre-LN | Xavier uniform |"), std::string::npos) << md;
  EXPECT_NE(md.find("| post-LN | 0.0010 | none |"), std::string::npos) << md;
  EXPECT_NE(md.find("| post-LN | 0.0030 | 2 steps |"), std::string::npos) << md;
  EXPECT_NE(md.find("| pre-LN | N(0, 0.02²) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| post-LN | tied E only |"), std::string::npos) << md;
  EXPECT_NE(md.find(" of 2 |"), std::string::npos) << "the stalled / diverged counts over 2 seeds\n" << md;
  const json j = json::parse(harness::read_text(d + "/out/results.json"));
  ASSERT_EQ(j["cells"].size(), 2u * 2 * 8);  // seeds x norms x arms
  for (const json& c : j["cells"]) {
    if (c["axes"]["arm"] != "init-grads") {
      EXPECT_EQ(c["curve"].size(), 2u) << "a point per eval_every steps";
      continue;
    }
    EXPECT_EQ(c["extra"]["grad_norms"].size(), 2u) << "depths";
    EXPECT_EQ(c["extra"]["grad_norms"]["3"]["xavier"].size(), 3u) << "one norm per layer";
  }
  EXPECT_TRUE(std::filesystem::exists(d + "/out/plots/grad_norms_depth3.dat"));
  EXPECT_TRUE(std::filesystem::exists(d + "/out/plots/warmup_loss.dat"));
}

// Killed (as a SIGKILL would, no checkpoint at the kill) inside the first cell and again inside the third, resumed
// each time: every cell's validation loss and curve equal the uninterrupted run's, and so do the tables.
TEST(StudiesInitWarmup, AKilledRunResumesToTheUninterruptedResultsAndTables) {
  const std::string d = dl::test::app_temp_dir("studies_iw_resume");
  const harness::Experiment e = init_warmup_experiment();
  const harness::Preset p = mini_preset(d, {"warmup", "no-warmup"});
  const std::vector<harness::Cell> cells =
      harness::expand_cells(e, p, {{"post"}, {"warmup", "no-warmup"}}, p.seeds, {"steps=8", "eval_every=1"});
  // stopped at step 5 (checkpoint 4), then in the third cell
  const auto [whole, resumed] = dl::test::sweep_whole_and_resumed(e, p, cells, d, 4);
  dl::test::expect_same_cells_and_table(whole, resumed, {"/metrics", "/curve"});
}
