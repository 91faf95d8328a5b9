// tests/apps/test_typed_resolver.cpp - the harness's typed cell resolver (apps/common/config.h resolve_cell,
// load_checked_preset) and the typed experiment on it (apps/common/typed_experiment.h), on a config of two axes:
// a string axis (task) and a real one (lr, which sets the field "rate"). What it shows: the axis values are checked
// and stored in their fields whatever the preset says, a --set of an axis field is refused, validate() runs, and a
// cell carries its config struct from expand_cells to run_cell, where the JSON is only the record of it.
#include <gtest/gtest.h>

#include <fstream>

#include "app_test_util.h"
#include "apps/common/typed_experiment.h"

namespace harness = dl::harness;
using dl::test::error_of;
using json = nlohmann::json;

namespace {

struct TwoAxes {
  std::string task = "none";
  double rate = 0.5;
  int steps = 10, layers = 1, seed = 0;
  template <class C, class F> static void fields(C& c, F&& f) {
    f("task", c.task), f("rate", c.rate), f("steps", c.steps), f("layers", c.layers), f("seed", c.seed);
  }
  void validate() const { harness::require_positive(task, "steps", steps); }
};

// a --set cannot reach the struct without going through fields(), so a value only the resolver sets shows that a
// cell's struct came from the resolver and not from its JSON
void deepen(TwoAxes& c) {
  if (c.task == "deep") c.layers = 6;
}

harness::Experiment two_axes_experiment(const std::string& dir) {
  harness::Experiment e;
  e.name = "typed_test", e.presets_dir = dir;
  e.axes = {{{"task", {"copy", "deep"}}, "", ""}, {{"lr", {}, "rate"}, "", ""}};
  harness::typed_cells<TwoAxes>(
      e,
      [](const TwoAxes& c, const harness::Cell& cell, const harness::RunContext&) {
        harness::CellResult r;
        r.metrics = {{"rate", c.rate}, {"steps", c.steps}, {"layers", c.layers}, {"json_steps", cell.config.at("steps")}};
        return r;
      },
      deepen);
  return e;
}

std::string write_preset(const std::string& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir + "/" + name + ".json") << text;
  return name;
}

}  // namespace

// Axis values go into their fields after the preset's sections (whatever a section says), a real axis as a number,
// the meaning hook after them, and every cell the preset names is resolved when it loads.
TEST(TypedResolver, AxisValuesWinAndAreChecked) {
  const std::string d = dl::test::app_temp_dir("typed_resolver_axes");
  const harness::Experiment e = two_axes_experiment(d);
  const std::vector<harness::Axis> axes(e.axes.begin(), e.axes.end());
  write_preset(d, "p", R"({"tasks": ["copy", "deep"], "lrs": ["0.25"],
      "defaults": {"task": "preset", "rate": 9, "steps": 3}, "tasks_cfg": {"deep": {"steps": 4}}})");
  const harness::Preset p = harness::load_checked_preset<TwoAxes>("p", d, axes, deepen);
  TwoAxes c = harness::resolve_cell<TwoAxes>(p, {"deep", "0.25"}, {"steps=7"}, deepen);
  EXPECT_EQ(c.task, "deep");  // the axis, not the preset's "defaults"
  EXPECT_EQ(c.rate, 0.25);    // the lr axis sets the field "rate"
  EXPECT_EQ(c.steps, 7);      // --set over tasks_cfg over defaults
  EXPECT_EQ(c.layers, 6);     // the meaning of "deep"
  c = harness::resolve_cell<TwoAxes>(p, {"copy", "0.25"}, {}, deepen);
  EXPECT_EQ(c.steps, 3);
  EXPECT_EQ(c.layers, 1);

  // each error says what is wrong with which value, where it came from
  EXPECT_EQ(error_of([&] {
              harness::resolve_cell<TwoAxes>(p, {"paste", "0.25"}, {});
            }),
            "unknown task 'paste' (known: copy, deep)");
  EXPECT_EQ(error_of([&] {
              harness::resolve_cell<TwoAxes>(p, {"copy", "fast"}, {});
            }),
            "lr 'fast': expected a positive number like 0.002");
  EXPECT_EQ(error_of([&] {
              harness::resolve_cell<TwoAxes>(p, {"copy", "0.25"}, {"rate=0.1"});
            }),
            "--set rate=0.1: task and lr are axes: --tasks / --lrs (run), --task / --lr (cell)");
  EXPECT_EQ(error_of([&] {
              harness::resolve_cell<TwoAxes>(p, {"copy", "0.25"}, {"steps=0"});
            }),
            "copy: field 'steps' must be > 0, found 0");
  EXPECT_NE(error_of([&] {
              harness::resolve_cell<TwoAxes>(p, {"copy", "0.25"}, {"steps=x"});
            }).find("--set steps=x: field 'steps' must be an integer, found string"),
            std::string::npos);
  // a preset whose own cells do not validate fails when it loads, naming the cell
  write_preset(d, "bad", R"({"tasks": ["copy"], "lrs": ["0.1"], "tasks_cfg": {"copy": {"steps": -1}}})");
  EXPECT_EQ(error_of([&] { harness::load_checked_preset<TwoAxes>("bad", d, axes); }),
            "copy: field 'steps' must be > 0, found -1");
}

// expand_cells stores the struct in the cell beside its JSON (written from it); run_cell receives the struct, not the
// JSON read back: a cell whose JSON was changed afterwards still runs with what the resolver made.
TEST(TypedResolver, CellsCarryTheirStructToRunCell) {
  const std::string d = dl::test::app_temp_dir("typed_resolver_cells");
  const harness::Experiment e = two_axes_experiment(d);
  write_preset(d, "p", R"({"tasks": ["copy", "deep"], "lrs": ["0.25", "0.5"], "defaults": {"steps": 3}})");
  const harness::Preset p = harness::load_preset("p", d, std::vector<harness::Axis>(e.axes.begin(), e.axes.end()));
  std::vector<harness::Cell> cells = harness::expand_cells(e, p, p.values, {0, 1}, {"steps=5"});
  ASSERT_EQ(cells.size(), 8u);
  EXPECT_EQ(cells[6].values, (std::vector<std::string>{"deep", "0.5"}));  // the axes in order, then the seeds
  for (const harness::Cell& cell : cells) {
    const TwoAxes* c = std::any_cast<TwoAxes>(&cell.typed);
    ASSERT_NE(c, nullptr) << cell.label();
    EXPECT_EQ(cell.config, harness::config_to_json(*c)) << cell.label();
    EXPECT_EQ(c->seed, cell.seed);
    EXPECT_EQ(c->steps, 5);
  }
  harness::Cell deep = cells[4];
  deep.config["steps"] = 99, deep.config["layers"] = 1;
  harness::CellResult r = e.run_cell(deep, harness::RunContext{});
  EXPECT_EQ(r.metric("steps"), 5);  // the struct's
  EXPECT_EQ(r.metric("layers"), 6);
  EXPECT_EQ(r.metric("rate"), 0.25);
  EXPECT_EQ(r.metric("json_steps"), 99);  // the record run_cell also sees
  // a cell read back from a result (no struct) is read from its JSON, each field checked, the cell named
  deep.typed.reset();
  EXPECT_EQ(e.run_cell(deep, harness::RunContext{}).metric("steps"), 99);
  deep.config["steps"] = "many";
  EXPECT_NE(error_of([&] { e.run_cell(deep, harness::RunContext{}); }).find("deep/0.25 seed 0: field 'steps' must be an integer"),
            std::string::npos);
  // bad axis values on the command line are the resolver's errors too
  EXPECT_EQ(error_of([&] {
              harness::expand_cells(e, p, {{"copy"}, {"-1"}}, {0}, {});
            }),
            "lr '-1': expected a positive number like 0.002");
}
