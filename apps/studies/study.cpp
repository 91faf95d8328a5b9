// apps/studies/study.cpp - see study.h.
#include "study.h"

#include <algorithm>
#include <sstream>

namespace studies {

namespace harness = dl::harness;

harness::Experiment study_experiment(const std::string& command, const std::string& description) {
  std::string folder = command;
  std::replace(folder.begin(), folder.end(), '-', '_');
  harness::Experiment e;
  e.name = "studies/" + folder;  // the default output folder: runs/studies/<folder>, as before the harness
  e.command = {command};         // `studies <command> run ...`: the --jobs workers are started the same way
  e.description = description;
  e.presets_dir = std::string(DL_SOURCE_DIR) + "/apps/studies/presets/" + folder;
  e.default_preset = "default";
  return e;
}

std::map<std::string, std::map<std::string, Cells>> cells_by(const std::vector<harness::CellResult>& rs, const std::string& outer,
                                                             const std::string& inner) {
  std::map<std::string, std::map<std::string, Cells>> by;
  for (const harness::CellResult& r : rs) by[r.cell.value(outer)][r.cell.value(inner)].push_back(&r);
  for (auto& [o, group] : by)
    for (auto& [i, cells] : group)
      std::sort(cells.begin(), cells.end(), [](auto* a, auto* b) { return a->cell.seed < b->cell.seed; });
  return by;
}

harness::MeanSE over(const Cells& rs, const std::string& metric) {
  std::vector<double> v;
  for (auto* r : rs) v.push_back(r->metric(metric));
  return harness::mean_se(v);
}

harness::Series accuracy_curve(const std::string& title, const Cells& rs, double scale) {
  harness::Series s;
  s.title = title;
  for (size_t k = 0; k < rs[0]->curve.size(); k++) {
    std::vector<double> at;
    for (auto* r : rs)
      if (k < r->curve.size()) at.push_back(scale * r->curve[k].accuracy);
    const harness::MeanSE m = harness::mean_se(at);
    s.x.push_back(rs[0]->curve[k].step), s.y.push_back(m.mean), s.err.push_back(m.se);
  }
  return s;
}

std::string number(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

}  // namespace studies
