// apps/common/typed_experiment.h - an experiment whose cells carry the app's own config struct C from the resolver to
// run_cell: a config value goes harness -> app once, as C, never back and forth through JSON.
//
//   preset, axis values, --set --resolve_cell<C> (config.h)--> C --> Cell::typed ----------> run_cell(const C&, cell, ctx)
//                                                               \--> Cell::config (JSON, written once from C): the
//                                                                    result, the model file's metadata, --resume
// An app writes C::fields and C::validate(), and its experiment is one call that names it, its presets, its axes and
// its cell; the app then adds only what differs (report, list, cost, its own subcommands):
//   Experiment e = typed_experiment<Config>("classify", "a registry layer on a task", dir, axes, run_cell);
//   e.report = report;                    // CellResult run_cell(const Config&, const Cell&, const RunContext&)
// An app whose axes are config.h Axis values (its load_preset takes them) passes axis_specs(axes(), fallbacks).
// What it is not: a second Experiment. run_main, --jobs, --resume and the reports are experiment.h's, unchanged.
#pragma once
#include <algorithm>
#include <any>
#include <map>
#include <stdexcept>

#include "apps/common/config.h"
#include "apps/common/experiment.h"

namespace dl::harness {

// A cell's config as C: the struct its resolve made (a cell of this run; no JSON is read), or, for a Cell that did not
// come from a resolve (one read back from a result.json for a report, one built by hand in a test), read from its JSON
// with every field checked, an error naming the cell.
template <class C> C config_of(const Cell& cell) {
  if (const C* c = std::any_cast<C>(&cell.typed)) return *c;
  return config_from_json<C>(cell.config, cell.label());
}

// How the cells of an app with config struct C are run.
template <class C> using TypedRun = CellResult (*)(const C& c, const Cell& cell, const RunContext& ctx);

// e.resolve and e.run_cell for the config struct C: resolve is resolve_cell<C> (its axes checked against the preset's,
// which are e.axes), stored in the cell as C and as JSON; run_cell hands `run` the cell's C. `meaning`: what an axis
// value means beyond its field (config.h AxisMeaning; may be empty).
template <class C> void typed_cells(Experiment& e, TypedRun<C> run, AxisMeaning<C> meaning = {}) {
  e.resolve = [meaning](const Preset& p, const std::vector<std::string>& values, const std::vector<std::string>& sets) {
    C c = resolve_cell<C>(p, values, sets, meaning);
    return ResolvedConfig{config_to_json(c), std::move(c)};
  };
  e.run_cell = [run](const Cell& cell, const RunContext& ctx) { return run(config_of<C>(cell), cell, ctx); };
}

// The experiment of an app with config struct C: its executable's name (the default output folder runs/<name>), its
// --help banner, its presets folder and its axes, the cells run by `run` through typed_cells. The default preset stays
// Experiment's ("tiny"); report, list, cost and commands are the app's to add.
template <class C>
Experiment typed_experiment(const std::string& name, const std::string& description, const std::string& presets_dir,
                            std::vector<AxisSpec> axes, TypedRun<C> run, AxisMeaning<C> meaning = {}) {
  Experiment e;
  e.name = name, e.description = description, e.presets_dir = presets_dir, e.axes = std::move(axes);
  typed_cells<C>(e, run, std::move(meaning));
  return e;
}

// Experiment::axes from an app's config.h axes: each axis's --help text is its name, and `fallbacks` gives the value
// `cell` takes for an axis not given (e.g. {"regime", "scratch"}); the other axes have none. A fallback for an axis the
// list does not have is a mistake in the app, a std::logic_error naming it.
inline std::vector<AxisSpec> axis_specs(const std::vector<Axis>& axes, const std::map<std::string, std::string>& fallbacks = {}) {
  for (const auto& f : fallbacks)
    if (std::none_of(axes.begin(), axes.end(), [&](const Axis& a) { return a.name == f.first; }))
      throw std::logic_error("axis_specs: a fallback '" + f.second + "' for axis '" + f.first + "', which the app does not have");
  std::vector<AxisSpec> specs;
  for (const Axis& a : axes) specs.push_back({a, fallbacks.count(a.name) ? fallbacks.at(a.name) : "", a.name});
  return specs;
}

}  // namespace dl::harness
