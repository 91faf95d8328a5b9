// tests/apps/test_studies_exact.cpp - `studies exact` (apps/studies/exact.h): EXACT learns an easy task in a fixed step
// budget and not at lr ~ 0, the expected calibration error on hand-made cases, a miniature run writes its table, JSON
// and curves, and bad settings name the problem.
#include <gtest/gtest.h>

#include <filesystem>

#include "app_test_util.h"
#include "apps/common/results.h"
#include "apps/studies/cli.h"
#include "apps/studies/exact.h"
#include "tasks/image.h"

using namespace studies;

TEST(StudiesExact, ExactLearnsAnEasyTaskAndNotAtZeroLr) {
  // the mixture without label noise, 4 classes: EXACT goes through the Genz path (3 dimensions)
  ExactTask t = make_mixture_task(2000, 200, 1000, 0.0, 1);
  ExactArm a;
  a.loss = "exact", a.lr = 1e-2;
  ExactRun r = train_exact_arm(t, a, 0, 300, 64, 300);
  EXPECT_GT(r.test_acc, 0.8) << "EXACT should learn the clean mixture in 300 steps";
  a.lr = 1e-7;
  ExactRun z = train_exact_arm(t, a, 0, 300, 64, 300);
  EXPECT_LT(z.test_acc, 0.6) << "at lr ~ 0 the model stays near its initialisation (" << z.test_acc << ")";
  // cross-entropy on the same budget, as a reference for the study's question
  a.loss = "ce", a.lr = 1e-2;
  EXPECT_GT(train_exact_arm(t, a, 0, 300, 64, 300).test_acc, 0.8);
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

TEST(StudiesExact, MiniatureRunWritesItsTable) {
  ExactStudyOptions o;
  o.out = dl::test::app_temp_dir("studies_exact");
  o.tasks = {"mixture"};
  if (std::filesystem::exists(std::string(dl::tasks::fashion_mnist_default_dir) + "/t10k-labels-idx1-ubyte.gz")) o.tasks.push_back("fashion");
  o.seeds = 2, o.lrs = {1e-2}, o.margins = {INFINITY, 2.0};
  o.steps = o.fashion_steps = 40, o.eval_every = 20, o.batch = 32;
  o.mixture_train = 400, o.mixture_val = 100, o.mixture_test = 200;
  o.fashion_train = 300, o.fashion_val = 100, o.fashion_test = 100;
  run_exact_study(o);
  const std::string md = dl::harness::read_text(o.out + "/exact.md");
  EXPECT_NE(md.find("| mixture | ce | 0.0100 | - |"), std::string::npos) << md;
  EXPECT_NE(md.find("| mixture | exact | 0.0100 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| mixture | EXACT - CE |"), std::string::npos) << md;
  EXPECT_NE(md.find("Selection grid"), std::string::npos) << md;
  if (o.tasks.size() == 2) EXPECT_NE(md.find("| fashion | exact |"), std::string::npos) << md;
  EXPECT_TRUE(std::filesystem::exists(o.out + "/exact.json"));
  EXPECT_TRUE(std::filesystem::exists(o.out + "/plots/curve_mixture.dat"));
}

TEST(StudiesExact, BadSettingsNameTheProblem) {
  ExactStudyOptions o;
  o.out = dl::test::app_temp_dir("studies_exact_bad");
  o.tasks = {"cifar"};
  EXPECT_NE(dl::test::error_of([&] { run_exact_study(o); }).find("unknown task 'cifar'"), std::string::npos);
  ExactTask t = make_mixture_task(10, 10, 10, 0.0);
  ExactArm a;
  a.loss = "hinge";
  EXPECT_NE(dl::test::error_of([&] { train_exact_arm(t, a, 0, 1, 4, 1); }).find("unknown loss 'hinge'"), std::string::npos);
  EXPECT_NE(dl::test::error_of([] { make_mixture_task(10, 10, 10, 1.5); }).find("label_noise"), std::string::npos);
  CLI::App app;
  add_exact_command(app);
  EXPECT_NE(dl::test::error_of([&] { app.parse("exact --tasks mixture,cifar", false); }).find("unknown task 'cifar'"),
            std::string::npos);
  CLI::App app2;
  add_exact_command(app2);
  EXPECT_THROW(app2.parse("exact --lrs 0.01,-1", false), CLI::ValidationError);
}
