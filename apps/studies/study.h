// apps/studies/study.h - what every training study (exact, cosent, init-warmup, mixers, nsp-bert, positions, unilm)
// says the same way, written once, so that a study's file says only what differs: its axes, its config, its cell
// and its tables.
//
//   study_experiment   the study's place on the harness: `studies <command> run|cell|list`, output runs/studies/<f>,
//                      presets apps/studies/presets/<f> (f: the command with '_' for '-'), default preset "default";
//                      the study then names its axes and calls harness::typed_cells<Config>(e, run_cell), as every
//                      app does (apps/common/typed_experiment.h: the axes checked, a --set of an axis's field refused,
//                      the preset's sections and the overrides, validate(); run_cell gets the config struct)
//   config_of, cells_by, in_preset_order, position, over, accuracy_curve, number
//                      the report's steps: a finished cell's config, the finished cells by two axes in seed order, the
//                      preset's order of a table's rows, a metric's mean ± SE over seeds, an evaluation curve's mean ±
//                      SE over seeds
//   built_once         a study's data built once per process (the cells and selection points of a run share it)
// What it is not: a second harness. Running, resuming, --jobs and reports stay in apps/common/experiment.h.
#pragma once
#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "apps/common/experiment.h"
#include "apps/common/stats.h"
#include "apps/common/typed_experiment.h"

namespace studies {

using Cells = std::vector<const dl::harness::CellResult*>;

// `studies <command> ...` (command "nsp-bert": runs/studies/nsp_bert, apps/studies/presets/nsp_bert).
dl::harness::Experiment study_experiment(const std::string& command, const std::string& description);

// A cell's config as the study's struct (apps/common/typed_experiment.h): the one resolved for it in this run, or for
// a finished cell read back from its result.json (the reports), from its JSON with every field checked.
using dl::harness::config_of;

// The finished cells grouped by the values of two axes (e.g. task -> arm), each group in seed order.
std::map<std::string, std::map<std::string, Cells>> cells_by(const std::vector<dl::harness::CellResult>& rs,
                                                             const std::string& outer, const std::string& inner);

// The keys of `present` (a map) in the preset's order of an axis, then the others in the map's order.
template <class M> std::vector<std::string> in_preset_order(std::vector<std::string> order, const M& present) {
  for (const auto& kv : present)
    if (std::find(order.begin(), order.end(), kv.first) == order.end()) order.push_back(kv.first);
  std::erase_if(order, [&](const std::string& k) { return !present.count(k); });
  return order;
}

// Where v stands in order (order.size() when it is not there): sorts a table's rows in the preset's order.
inline size_t position(const std::vector<std::string>& order, const std::string& v) {
  return std::find(order.begin(), order.end(), v) - order.begin();
}

// One metric of the cells, mean ± SE over them (harness::mean_se).
dl::harness::MeanSE over(const Cells& rs, const std::string& metric);

// The cells' evaluation curves as one series: at each evaluation step of the first cell, scale x the accuracy's
// mean ± SE over the cells that reached it.
dl::harness::Series accuracy_curve(const std::string& title, const Cells& rs, double scale = 1);

// A real as the shortest text that reads back as printed by an ostream (0.001 -> "0.001", 1e-05 -> "1e-05"): the
// lrs in tables and in the selection grid's folder names.
std::string number(double x);

// The value made by make() for this key, built once per process and kept.
template <class T, class F> const T& built_once(const dl::harness::json& key, F make) {
  static std::map<std::string, T> made;
  auto it = made.find(key.dump());
  if (it == made.end()) it = made.emplace(key.dump(), make()).first;
  return it->second;
}

}  // namespace studies
