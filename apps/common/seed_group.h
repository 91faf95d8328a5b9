// apps/common/seed_group.h - the finished cells of one key (every axis value but the seed): what a report averages,
// pairs and tests over. lra_benchmark's and pretrained_convs' reports derive their groups from it and add the axis
// values they name (task, model, regime); each groups its results in its own order.
#pragma once
#include <string>
#include <vector>

#include "results.h"

namespace dl::harness {

struct SeedGroup {
  std::vector<const CellResult*> seeds;  // one finished cell per seed, in the order the report added them

  // One value per seed; CellResult::metric throws naming a metric the result lacks.
  std::vector<double> metric(const std::string& name) const {
    std::vector<double> v;
    for (auto* r : seeds) v.push_back(r->metric(name));
    return v;
  }
  std::vector<int> seed_ids() const {
    std::vector<int> s;
    for (auto* r : seeds) s.push_back(r->cell.seed);
    return s;
  }
  bool has(const std::string& name) const { return !seeds.empty() && seeds.front()->metrics.count(name) > 0; }
};

}  // namespace dl::harness
