// apps/common/typed_experiment.h - an experiment whose cells carry the app's own config struct C from the resolver to
// run_cell: a config value goes harness -> app once, as C, never back and forth through JSON.
//
//   preset, axis values, --set --resolve_cell<C> (config.h)--> C --> Cell::typed ----------> run_cell(const C&, cell, ctx)
//                                                               \--> Cell::config (JSON, written once from C): the
//                                                                    result, the model file's metadata, --resume
// An app names its axes (Experiment::axes), writes C::fields and C::validate(), and hands over its cell:
//   e.axes = {{{"task", tasks}, "", "a task"}, {{"layer", layers}, "", "a layer"}};
//   harness::typed_cells<Config>(e, run_cell);   // CellResult run_cell(const Config&, const Cell&, const RunContext&)
// What it is not: a second Experiment. run_main, --jobs, --resume and the reports are experiment.h's, unchanged.
#pragma once
#include <any>

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

}  // namespace dl::harness
