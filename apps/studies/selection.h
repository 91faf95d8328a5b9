// apps/studies/selection.h - a setting chosen on validation once per run and shared by the cells that train it.
//
// `studies exact` and `studies cosent` choose each loss's learning rate (exact: also its margin and sigma mode) by
// the validation score of one selection seed, then train the chosen setting on every seed. On the harness a cell is
// (task, arm, seed); the grid that picks its setting is the same for every seed of (task, arm), so its points are not
// cells of their own (the harness would run each once per seed) but runs held in the run folder:
//   <out>/selection/<group>/<point>/   config.json, metrics.csv, train/ checkpoints, result.json (written last)
// Each point is trained once, on run_phase, by the first cell that needs it; every later cell, a --resume and the
// other --jobs workers read its result.json.
//   - a result.json whose config is the point's is reused; a folder left by another config is cleared first
//   - a half-done point resumes from its checkpoints with --resume and starts afresh without it
//   - --jobs: a point is locked while it trains (flock on <point>.lock); a worker first trains the points nobody
//     holds, then waits for the rest, so two workers on the same grid split it between them
//   - under mpirun every rank trains every point (data-parallel, as a cell); rank 0 alone locks and writes
// What it is not: a search (the grid is the preset's list), nor a cache between runs (each --out has its own).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "apps/common/phase.h"

namespace studies {

struct SelectionPoint {
  std::string name;          // its folder under <out>/selection/<group>/, e.g. "exact_lr0.001_margin1_fixed"
  std::string label;         // for the logs, e.g. "[mixture select exact lr 0.001 margin 1 sigma fixed seed 100]"
  dl::harness::json config;  // everything its training depends on: compared before a result is reused
};

// Trains points[i] in ctx.dir (checkpoints, metrics.csv) and returns what the study keeps of it (its validation
// score at least).
using PointTrainer = std::function<dl::harness::json(size_t i, const dl::harness::RunContext& ctx)>;

// Every point's result, in the order given: read where a run has already trained it, trained here otherwise.
// `ctx` is the cell's (its out, resume, quiet, ranks); `group` a folder name such as "mixture/exact".
std::vector<dl::harness::json> run_selection(const dl::harness::RunContext& ctx, const std::string& group,
                                             const std::vector<SelectionPoint>& points, const PointTrainer& train);

// The index of the highest score (the first of equal ones); scores must not be empty.
size_t best_index(const std::vector<double>& scores);

}  // namespace studies
