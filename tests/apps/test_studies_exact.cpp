// tests/apps/test_studies_exact.cpp - `studies exact` (apps/studies/exact.h): EXACT learns an easy task in a fixed step
// budget and not at lr ~ 0, the expected calibration error on hand-made cases; as an experiment on the harness: bad
// settings are named, the old command line is read as before, the selection grid is trained once per run folder and
// its winner is the best on validation, a miniature run writes its table, grid and curves, and a run killed twice
// resumes to the uninterrupted one's results and tables.
#include <gtest/gtest.h>

#include <filesystem>

#include "app_test_util.h"
#include "apps/common/results.h"
#include "apps/studies/cli.h"
#include "apps/studies/exact.h"
#include "apps/studies/selection.h"
#include "tasks/image.h"

using namespace studies;
namespace harness = dl::harness;
using json = nlohmann::json;

namespace {

harness::RunContext quiet_ctx(const std::string& dir) {
  harness::RunContext ctx;
  ctx.out = dir, ctx.dir = dir + "/cell", ctx.quiet = true;
  std::filesystem::create_directories(ctx.dir);
  return ctx;
}

bool have_fashion() {
  return std::filesystem::exists(std::string(dl::tasks::fashion_mnist_default_dir) + "/t10k-labels-idx1-ubyte.gz");
}

// A miniature of the default preset: small mixture (and Fashion-MNIST) splits, 40 steps of 32, a curve point every
// 20, the grid lr {1e-2, 3e-3} x margin {none, 2} x sigma {fixed, learned}, seeds 0 and 1.
harness::Preset mini_preset(const std::string& dir, const std::vector<std::string>& tasks) {
  const harness::Experiment e = exact_experiment();
  json p = {{"description", "test"},
            {"tasks", tasks},
            {"arms", {"ce", "exact"}},
            {"seeds", {0, 1}},
            {"defaults",
             {{"steps", 40},
              {"fashion_steps", 40},
              {"eval_every", 20},
              {"batch", 32},
              {"lrs", "0.01,0.003"},
              {"margins", "none,2"},
              {"mixture_train", 400},
              {"mixture_val", 100},
              {"mixture_test", 200},
              {"fashion_train", 300},
              {"fashion_val", 100},
              {"fashion_test", 100}}}};
  harness::write_text_atomic(dir + "/mini.json", p.dump(2));
  return harness::load_preset(dir + "/mini.json", e.presets_dir, std::vector<harness::Axis>(e.axes.begin(), e.axes.end()));
}

}  // namespace

TEST(StudiesExact, ExactLearnsAnEasyTaskAndNotAtZeroLr) {
  const std::string d = dl::test::app_temp_dir("studies_exact_learns");
  // the mixture without label noise, 4 classes: EXACT goes through the Genz path (3 dimensions)
  ExactTask t = make_mixture_task(2000, 200, 1000, 0.0, 1);
  ExactArm a;
  a.loss = "exact", a.lr = 1e-2;
  const ExactBudget budget{300, 64, 300, 300};
  ExactRun r = train_exact_arm(t, a, 0, budget, quiet_ctx(d + "/a"));
  EXPECT_GT(r.test_acc, 0.8) << "EXACT should learn the clean mixture in 300 steps";
  ASSERT_EQ(r.curve.size(), 1u);
  EXPECT_EQ(r.curve[0].accuracy, r.test_acc) << "the curve is the test accuracy";
  a.lr = 1e-7;
  ExactRun z = train_exact_arm(t, a, 0, budget, quiet_ctx(d + "/b"));
  EXPECT_LT(z.test_acc, 0.6) << "at lr ~ 0 the model stays near its initialisation (" << z.test_acc << ")";
  // cross-entropy on the same budget, as a reference for the study's question
  a.loss = "ce", a.lr = 1e-2;
  EXPECT_GT(train_exact_arm(t, a, 0, budget, quiet_ctx(d + "/c")).test_acc, 0.8);
}

TEST(StudiesExact, ExpectedCalibrationError) {
  using dl::from_vector;
  // four rows at confidence 0.75, three right: calibrated, ECE 0; the same rows all wrong: ECE 0.75
  dl::Tensor p = from_vector(std::vector<double>{0.75, 0.25, 0.75, 0.25, 0.25, 0.75, 0.25, 0.75}, {4, 2});
  EXPECT_NEAR(expected_calibration_error(p, from_vector(std::vector<int64_t>{0, 0, 1, 0}, {4})), 0.0, 1e-12);
  EXPECT_NEAR(expected_calibration_error(p, from_vector(std::vector<int64_t>{1, 1, 0, 0}, {4})), 0.75, 1e-12);
  // two bins: 0.95 right (gap 0.05) and 0.55 wrong (gap 0.55): mean of the gaps weighted by 1/2 each
  dl::Tensor q = from_vector(std::vector<double>{0.95, 0.05, 0.45, 0.55}, {2, 2});
  EXPECT_NEAR(expected_calibration_error(q, from_vector(std::vector<int64_t>{0, 0}, {2})), 0.5 * 0.05 + 0.5 * 0.55, 1e-12);
}

TEST(StudiesExact, BadSettingsNameTheProblem) {
  ExactTask t = make_mixture_task(10, 10, 10, 0.0);
  ExactArm a;
  a.loss = "hinge";
  const std::string d = dl::test::app_temp_dir("studies_exact_bad");
  EXPECT_NE(dl::test::error_of([&] {
              train_exact_arm(t, a, 0, {1, 4, 1, 1}, quiet_ctx(d));
            }).find("unknown loss 'hinge'"),
            std::string::npos);
  EXPECT_NE(dl::test::error_of([] { make_mixture_task(10, 10, 10, 1.5); }).find("label_noise"), std::string::npos);
  const harness::Experiment e = exact_experiment();
  const harness::Preset p =
      harness::load_preset("default", e.presets_dir, std::vector<harness::Axis>(e.axes.begin(), e.axes.end()));
  auto error = [&](const std::vector<std::string>& sets) {
    return dl::test::error_of([&] { harness::expand_cells(e, p, {{"mixture"}, {"exact"}}, {0}, sets); });
  };
  EXPECT_EQ(error({}), "") << "the default preset is valid";
  EXPECT_NO_THROW(harness::load_preset("large", e.presets_dir, p.axes));
  EXPECT_NE(error({"lrs=\"0.01,-1\""}).find("'-1'"), std::string::npos);
  EXPECT_NE(error({"margins=\"none,wide\""}).find("'margins'"), std::string::npos);
  EXPECT_NE(error({"sigma_modes=\"fixed,free\""}).find("'free'"), std::string::npos);
  EXPECT_NE(error({"label_noise=1.5"}).find("label_noise"), std::string::npos);
  EXPECT_NE(error({"steps=0"}).find("'steps'"), std::string::npos);
  EXPECT_NE(error({"arm=ce"}).find("--arms"), std::string::npos) << "an axis";
  EXPECT_NE(dl::test::error_of([&] { harness::load_preset("huge", e.presets_dir, p.axes); }).find("huge"), std::string::npos);
  // an unknown task on the command line, as before the harness
  std::vector<std::string> args = {"exact", "--tasks", "mixture,cifar", "--out", d + "/cli", "--quiet"};
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  testing::internal::CaptureStderr();
  EXPECT_EQ(harness_main(exact_experiment(), exact_legacy_flags(), (int)argv.size(), argv.data()), 1);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("unknown task 'cifar'"), std::string::npos);
}

TEST(StudiesExact, TheOldCommandLineIsReadAsBefore) {
  using V = std::vector<std::string>;
  const LegacyFlags& f = exact_legacy_flags();
  EXPECT_EQ(legacy_args({"--seeds", "5", "--steps", "300", "--fashion-steps=200", "--lrs", "0.001,0.01", "--margins", "0,1"}, f),
            (V{"run", "--seeds", "0-4", "--set", "steps=300", "--set", "fashion_steps=200", "--set", "lrs=\"0.001,0.01\"",
               "--set", "margins=\"0,1\""}));
  EXPECT_EQ(legacy_args({"--no-grad-norm", "--sigma-modes", "fixed", "--tasks", "mixture", "--preset", "large"}, f),
            (V{"run", "--set", "grad_norm=false", "--set", "sigma_modes=\"fixed\"", "--tasks", "mixture", "--preset", "large"}));
  // "0" in --margins is no margin, as before
  ExactConfig c;
  c.margins = "0,1";
  EXPECT_EQ(c.margin_list(), (std::vector<double>{INFINITY, 1.0}));
}

// The grid's points are trained on the selection seed once per run folder: a second cell of the same arm reads them,
// a changed setting trains them again, and each point is trained where its config says.
TEST(StudiesExact, TheSelectionGridIsTrainedOncePerRunAndConfig) {
  const std::string d = dl::test::app_temp_dir("studies_exact_selection");
  harness::RunContext ctx = quiet_ctx(d);
  int trained = 0;
  auto run = [&](const json& config) {
    std::vector<SelectionPoint> points = {{"a", "[a]", config}, {"b", "[b]", config}};
    points[1].config["lr"] = 2;
    return run_selection(ctx, "mixture/ce", points, [&](size_t i, const harness::RunContext& pctx) {
      trained++;
      EXPECT_EQ(pctx.dir, d + "/selection/mixture/ce/" + points[i].name);
      return json{{"val_acc", 0.5 + (double)i}};
    });
  };
  const std::vector<json> first = run({{"lr", 1}});
  EXPECT_EQ(trained, 2);
  EXPECT_EQ(first[1]["val_acc"], 1.5);
  EXPECT_EQ(run({{"lr", 1}}), first);
  EXPECT_EQ(trained, 2) << "a second cell reads the points";
  run({{"lr", 1}, {"steps", 9}});
  EXPECT_EQ(trained, 4) << "another config trains them again";
  EXPECT_EQ(best_index({0.1, 0.3, 0.3, 0.2}), 1u) << "the first of equal scores";
}

TEST(StudiesExact, MiniatureRunWritesItsTable) {
  const std::string d = dl::test::app_temp_dir("studies_exact");
  const harness::Experiment e = exact_experiment();
  std::vector<std::string> tasks = {"mixture"};
  if (have_fashion()) tasks.push_back("fashion");
  const harness::Preset p = mini_preset(d, tasks);
  harness::run_cells(e, p, harness::expand_cells(e, p, p.values, p.seeds, {}), dl::test::quiet_in(d + "/out"));
  harness::write_reports(e, p, d + "/out");
  const std::string md = harness::read_text(d + "/out/results.md");
  EXPECT_NE(md.find("over 2 seeds"), std::string::npos) << md;
  EXPECT_NE(md.find("| mixture | ce | 0.0"), std::string::npos) << md;
  EXPECT_NE(md.find("| mixture | exact | 0.0"), std::string::npos) << md;
  EXPECT_NE(md.find("| mixture | EXACT - CE |"), std::string::npos) << md;
  EXPECT_NE(md.find("Selection grid: validation accuracy on the selection seed 100"), std::string::npos) << md;
  EXPECT_NE(md.find("| mixture | exact | 0.0030 | 2.0 | learned |"), std::string::npos) << "a grid row\n" << md;
  EXPECT_NE(md.find("run on seeds 0..1"), std::string::npos) << md;
  if (tasks.size() == 2) EXPECT_NE(md.find("| fashion | exact |"), std::string::npos) << md;
  const json j = json::parse(harness::read_text(d + "/out/results.json"));
  ASSERT_EQ(j["cells"].size(), tasks.size() * 2 * 2);
  for (const json& c : j["cells"]) {
    SCOPED_TRACE(c["cell"].dump());
    const json& grid = c["extra"]["selection"];
    ASSERT_EQ(grid.size(), c["axes"]["arm"] == "ce" ? 2u : 8u);
    size_t best = 0;  // the chosen setting has the best validation accuracy of the grid (the first of equal ones)
    for (size_t k = 1; k < grid.size(); k++)
      if (grid[k]["val_acc"].get<double>() > grid[best]["val_acc"].get<double>()) best = k;
    EXPECT_EQ(c["extra"]["chosen"]["lr"], grid[best]["lr"]);
    EXPECT_EQ(c["extra"]["chosen"]["margin"], grid[best]["margin"]);
    EXPECT_EQ(c["curve"].size(), 2u) << "the test accuracy every 20 steps";
  }
  EXPECT_TRUE(std::filesystem::exists(d + "/out/plots/curve_mixture.dat"));
  EXPECT_TRUE(std::filesystem::exists(d + "/out/selection/mixture/exact/exact_lr0.003_margin2_learned/result.json"));
}

// Killed (as a SIGKILL would, no checkpoint at the kill) inside the first selection point of EXACT (whose gradient
// normalisation keeps a running norm that the checkpoint must hold) and again later, resumed each time: every cell's
// metrics, selection grid and curve equal the uninterrupted run's, and so do the tables.
TEST(StudiesExact, AKilledRunResumesToTheUninterruptedResultsAndTables) {
  const std::string d = dl::test::app_temp_dir("studies_exact_resume");
  const harness::Experiment e = exact_experiment();
  const harness::Preset p = mini_preset(d, {"mixture"});
  const std::vector<harness::Cell> cells =
      harness::expand_cells(e, p, {{"mixture"}, {"exact", "ce"}}, p.seeds, {"steps=8", "eval_every=2", "margins=none"});
  // stopped at step 5 (checkpoint 4), and again later
  const auto [whole, resumed] = dl::test::sweep_whole_and_resumed(e, p, cells, d, 4);
  dl::test::expect_same_cells_and_table(whole, resumed, {"/metrics", "/extra/selection", "/curve"});
}
