// tests/apps/test_studies_common.cpp - what the training studies share (apps/studies/study.h, cli.h's legacy_flags)
// and the list parsers of the harness that replaced the studies' own (apps/common/config.h): each against values
// worked out by hand, and each error naming the field, the item and what was expected.
#include <gtest/gtest.h>

#include <cmath>

#include "app_test_util.h"
#include "apps/common/config.h"
#include "apps/studies/cli.h"
#include "apps/studies/exact.h"
#include "apps/studies/study.h"

using namespace studies;
namespace harness = dl::harness;

namespace {

harness::CellResult cell(const std::string& task, const std::string& arm, int seed, std::vector<double> curve = {}) {
  harness::CellResult r;
  r.cell.axes = {"task", "arm"}, r.cell.values = {task, arm}, r.cell.seed = seed;
  r.metrics["acc"] = 0.1 * seed;
  for (size_t k = 0; k < curve.size(); k++) r.curve.push_back({"train", 10 * (int)(k + 1), 0, NAN, curve[k], 0});
  return r;
}

}  // namespace

TEST(StudiesCommon, ListParsersNameTheFieldAndTheItem) {
  EXPECT_EQ(harness::split_list("a,,b"), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(harness::parse_real_list("0.001,3e-3", "lrs"), (std::vector<double>{0.001, 0.003}));
  EXPECT_EQ(harness::parse_real_list("0,1", "margins", true), (std::vector<double>{0, 1}));
  const std::string bad = dl::test::error_of([] { harness::parse_real_list("0.1,x", "lrs"); });
  EXPECT_EQ(bad, "field 'lrs': 'x' in \"0.1,x\" is not a positive number");
  EXPECT_NE(dl::test::error_of([] { harness::parse_real_list("0", "lrs"); }).find("positive"), std::string::npos);
  EXPECT_NE(dl::test::error_of([] { harness::parse_real_list("0.1,", "lrs"); }).find("''"), std::string::npos);
  EXPECT_NE(dl::test::error_of([] { harness::parse_real_list("inf", "lrs"); }).find("'inf'"), std::string::npos);
  EXPECT_NE(dl::test::error_of([] { harness::parse_real_list("-1", "margins", true); }).find("non-negative"), std::string::npos);
  EXPECT_EQ(harness::parse_name_list("fixed", "sigma_modes", {"fixed", "learned"}), (std::vector<std::string>{"fixed"}));
  EXPECT_EQ(dl::test::error_of([] {
              harness::parse_name_list("fixed,wide", "sigma_modes", {"fixed", "learned"});
            }),
            "field 'sigma_modes': 'wide' in \"fixed,wide\" is not one of fixed, learned");
  EXPECT_EQ(harness::parse_int_list("3,7", "kernel_sizes"), (std::vector<int64_t>{3, 7}));
  EXPECT_EQ(harness::parse_positive_real("0.002", "lr"), 0.002);
  EXPECT_EQ(dl::test::error_of([] { harness::parse_positive_real("2x", "lr"); }),
            "lr '2x': expected a positive number like 0.002");
}

TEST(StudiesCommon, ExperimentAndAxisRefusal) {
  const harness::Experiment e = study_experiment("nsp-bert", "studies nsp-bert: a question");
  EXPECT_EQ(e.name, "studies/nsp_bert");
  EXPECT_EQ(e.command, (std::vector<std::string>{"nsp-bert"}));
  EXPECT_EQ(e.presets_dir, std::string(DL_SOURCE_DIR) + "/apps/studies/presets/nsp_bert");
  EXPECT_EQ(e.default_preset, "default");
  // (the refusal is the harness's typed resolver's now, apps/common/config.h; each axis names the field it sets)
  const std::vector<harness::Axis> two = {{"task", {}}, {"position", {}, "pos"}};
  EXPECT_EQ(dl::test::error_of([&] {
              harness::refuse_axis_sets(two, {"steps=3", "pos=alibi"});
            }),
            "--set pos=alibi: task and position are axes: --tasks / --positions (run), --task / --position (cell)");
  EXPECT_EQ(dl::test::error_of([&] { harness::refuse_axis_sets(two, {"steps=3", "position_scale=2"}); }), "");
  const std::vector<harness::Axis> three = {{"task", {}}, {"mixer", {}}, {"lr", {}}};
  EXPECT_EQ(dl::test::error_of([&] { harness::refuse_axis_sets(three, {"lr=0.1"}); }),
            "--set lr=0.1: task, mixer and lr are axes: --tasks / --mixers / --lrs (run), --task / --mixer / --lr (cell)");
}

TEST(StudiesCommon, CellsGroupedInSeedOrderAndRowsInThePresetsOrder) {
  const std::vector<harness::CellResult> rs = {cell("b", "y", 2), cell("b", "y", 0), cell("a", "y", 1), cell("b", "x", 1)};
  const auto by = cells_by(rs, "task", "arm");
  ASSERT_EQ(by.at("b").at("y").size(), 2u);
  EXPECT_EQ(by.at("b").at("y")[0]->cell.seed, 0);
  EXPECT_EQ(by.at("b").at("y")[1]->cell.seed, 2);
  EXPECT_EQ(by.at("a").at("y").size(), 1u);
  // the preset's order first (a value it lists but no cell has is left out), then the others in the map's order
  EXPECT_EQ(in_preset_order({"c", "b"}, by), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(position({"c", "b"}, "b"), 1u);
  EXPECT_EQ(position({"c", "b"}, "z"), 2u);
  const harness::MeanSE m = over(by.at("b").at("y"), "acc");  // 0 and 0.2: mean 0.1, SE = sd / sqrt(2) = 0.1
  EXPECT_NEAR(m.mean, 0.1, 1e-12);
  EXPECT_NEAR(m.se, 0.1, 1e-12);
}

TEST(StudiesCommon, AccuracyCurveIsTheMeanOverTheSeedsThatReachedEachStep) {
  const std::vector<harness::CellResult> rs = {cell("t", "a", 0, {0.5, 0.7}), cell("t", "a", 1, {0.3})};
  const Cells cells = {&rs[0], &rs[1]};
  const harness::Series s = accuracy_curve("a", cells, 100);
  EXPECT_EQ(s.title, "a");
  EXPECT_EQ(s.x, (std::vector<double>{10, 20}));
  ASSERT_EQ(s.y.size(), 2u);
  EXPECT_NEAR(s.y[0], 40, 1e-9);  // (50 + 30) / 2
  EXPECT_NEAR(s.err[0], 10, 1e-9);
  EXPECT_NEAR(s.y[1], 70, 1e-9);  // only seed 0 reached step 20
  EXPECT_EQ(s.err[1], 0);
  EXPECT_EQ(number(0.001), "0.001");
  EXPECT_EQ(number(1e-5), "1e-05");
}

TEST(StudiesCommon, LegacyFlagsOfConfigFields) {
  const LegacyFlags f = legacy_flags<ExactConfig>({"fashion_steps", "sigma_modes"}, {{"--fast", set_field("steps")}},
                                                  {{"--quick", {"--preset", "q"}}});
  using V = std::vector<std::string>;
  EXPECT_EQ(legacy_args({"--fashion-steps", "20", "--sigma-modes=fixed", "--fast", "3", "--quick"}, f),
            (V{"run", "--set", "fashion_steps=20", "--set", "sigma_modes=\"fixed\"", "--set", "steps=3", "--preset", "q"}));
  EXPECT_EQ(legacy_args({"--label-noise", "0.1"}, f), (V{"run", "--label-noise", "0.1"})) << "not listed: left as it is";
  EXPECT_THROW(legacy_flags<ExactConfig>({"fashion_stps"}), std::logic_error);
}
