// tests/apps/test_typed_experiment.cpp - an app's experiment written once (apps/common/typed_experiment.h
// typed_experiment, axis_specs) and the apps on it. What it shows: the Experiment typed_experiment returns names the
// app, its presets and its axes and runs a cell with the struct its resolve made (the meaning hook included);
// axis_specs gives each axis its fallback and refuses one for an axis the app lacks; lra_benchmark, fpt,
// pretrained_convs and classify keep the names, axes, fallbacks and help texts they had before they moved onto it;
// lra_benchmark's cost reads the cell's struct, not its JSON.
#include <gtest/gtest.h>

#include <fstream>

#include "app_test_util.h"
#include "apps/classify/classify.h"
#include "apps/common/typed_experiment.h"
#include "apps/fpt/app.h"
#include "apps/lra_benchmark/app.h"
#include "apps/lra_benchmark/config.h"
#include "apps/pretrained_convs/app.h"

namespace harness = dl::harness;
using dl::test::error_of;

namespace {

struct Toy {
  std::string task = "none";
  int steps = 10, layers = 1, seed = 0;
  template <class C, class F> static void fields(C& c, F&& f) {
    f("task", c.task), f("steps", c.steps), f("layers", c.layers), f("seed", c.seed);
  }
  void validate() const { harness::require_positive(task, "steps", steps); }
};

// only the resolver's meaning hook sets layers to 6: a run_cell that sees it got the struct the resolve made
void deepen(Toy& c) {
  if (c.task == "deep") c.layers = 6;
}

harness::CellResult run_toy(const Toy& c, const harness::Cell&, const harness::RunContext&) {
  harness::CellResult r;
  r.metrics = {{"steps", c.steps}, {"layers", c.layers}};
  return r;
}

// (name, axes as "name:fallback:help") of an Experiment, to compare with what an app had
std::vector<std::string> axes_of(const harness::Experiment& e) {
  std::vector<std::string> out;
  for (const harness::AxisSpec& a : e.axes) out.push_back(a.name + ":" + a.fallback + ":" + a.help);
  return out;
}

}  // namespace

// The Experiment names the app, its presets and its axes; its cells carry the resolved struct to run_cell.
TEST(TypedExperiment, NamesTheAppAndRunsCellsWithTheirStruct) {
  const std::string d = dl::test::app_temp_dir("typed_experiment_toy");
  std::ofstream(d + "/p.json") << R"({"tasks": ["copy", "deep"], "defaults": {"steps": 3}})";
  const harness::Experiment e =
      harness::typed_experiment<Toy>("toy", "a toy", d, {{{"task", {"copy", "deep"}}, "copy", "a task"}}, run_toy, deepen);
  EXPECT_EQ(e.name, "toy");
  EXPECT_EQ(e.description, "a toy");
  EXPECT_EQ(e.presets_dir, d);
  EXPECT_EQ(e.default_preset, "tiny");
  EXPECT_EQ(axes_of(e), std::vector<std::string>({"task:copy:a task"}));
  EXPECT_FALSE(e.report || e.list || e.cost || e.commands);  // the app's to add

  const std::vector<harness::Axis> axes(e.axes.begin(), e.axes.end());
  const harness::Preset p = harness::load_preset("p", d, axes);
  std::vector<harness::Cell> cells = harness::expand_cells(e, p, p.values, {0}, {"steps=5"});
  ASSERT_EQ(cells.size(), 2u);
  for (harness::Cell& cell : cells) {
    cell.config = nlohmann::json::object();  // run_cell reads the struct, never the JSON
    const harness::CellResult r = e.run_cell(cell, {});
    EXPECT_EQ(r.metrics.at("steps"), 5) << cell.label();
    EXPECT_EQ(r.metrics.at("layers"), cell.value("task") == "deep" ? 6 : 1) << cell.label();
  }
}

TEST(TypedExperiment, AxisSpecsGiveFallbacksAndRefuseAnUnknownAxis) {
  const std::vector<harness::Axis> axes = {{"task", {"a"}}, {"regime", {"scratch", "spt"}}};
  harness::Experiment e;
  e.axes = harness::axis_specs(axes, {{"regime", "scratch"}});
  EXPECT_EQ(axes_of(e), std::vector<std::string>({"task::task", "regime:scratch:regime"}));
  EXPECT_EQ(e.axes[1].known, axes[1].known);
  EXPECT_EQ(error_of([&] {
              harness::axis_specs(axes, {{"regim", "scratch"}});
            }),
            "axis_specs: a fallback 'scratch' for axis 'regim', which the app does not have");
}

// What the apps' experiments were before they were written with typed_experiment: the same names, presets and axes.
TEST(TypedExperiment, AppsKeepTheirNamesAxesAndFallbacks) {
  const std::string src = std::string(DL_SOURCE_DIR) + "/apps/";
  const harness::Experiment lra = lra::experiment(), fpt = fpt::experiment(), pconv = pconv::experiment(),
                            cls = classify::experiment();
  EXPECT_EQ(lra.name, "lra_benchmark");
  EXPECT_EQ(lra.presets_dir, src + "lra_benchmark/presets");
  EXPECT_EQ(axes_of(lra), std::vector<std::string>({"task::task", "model::model", "regime:scratch:regime"}));
  EXPECT_EQ(fpt.name, "fpt");
  EXPECT_EQ(fpt.presets_dir, src + "fpt/presets");
  EXPECT_EQ(axes_of(fpt), std::vector<std::string>({"task::task", "arm::arm"}));
  EXPECT_EQ(pconv.name, "pretrained_convs");
  EXPECT_EQ(pconv.presets_dir, src + "pretrained_convs/presets");
  EXPECT_EQ(axes_of(pconv), std::vector<std::string>({"task::task", "model::model", "regime:pretrained:regime"}));
  EXPECT_EQ(cls.name, "classify");
  EXPECT_EQ(cls.presets_dir, src + "classify/presets");
  EXPECT_EQ(axes_of(cls), std::vector<std::string>({"task::a classification task", "layer::a registry layer"}));
  for (const harness::Experiment* e : {&lra, &fpt, &pconv, &cls}) {
    EXPECT_EQ(e->default_preset, "tiny") << e->name;
    EXPECT_TRUE(e->resolve && e->run_cell && e->report) << e->name;
  }
  EXPECT_TRUE(lra.cost && lra.list && fpt.list && pconv.list);
}

// lra_benchmark's cost (the order --jobs starts cells in): its training steps, self-pretrained cells' pretraining
// first, read from the cell's struct (a cell's JSON emptied changes nothing).
TEST(LraCost, IsTheTrainingStepsReadFromTheCellsStruct) {
  const harness::Experiment e = lra::experiment();
  const harness::Preset p = lra::load_preset("tiny");  // steps 350, pretrain_steps 800; regimes scratch, spt-masked
  std::vector<harness::Cell> cells =
      harness::expand_cells(e, p, {{"image14"}, {"s4d"}, {"scratch", "spt-masked"}}, {0}, {"steps=7", "pretrain_steps=11"});
  ASSERT_EQ(cells.size(), 2u);
  for (harness::Cell& cell : cells) cell.config = nlohmann::json::object();
  EXPECT_EQ(e.cost(cells[0]), 7);
  EXPECT_EQ(e.cost(cells[1]), 7 + 11);
}
