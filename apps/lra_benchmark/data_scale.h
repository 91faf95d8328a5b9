// apps/lra_benchmark/data_scale.h - the SPT gain as the labelled training set shrinks, the data-scale experiment of
// "Never Train from Scratch" (Amos, Berant, Gupta 2023): self-pretraining matters most when labelled data are few.
//
//   lra_benchmark data-scale [--preset tiny|small|FILE] [--fractions 1,0.5,0.25,0.1] [--tasks ..] [--models ..]
//                            [--regimes scratch,spt-masked] [--seeds 0,1,2] [--set k=v].. [--out DIR] [--resume]
//                            [--threads 2] [--quiet]
//
// For each fraction f, every cell of the preset (the chosen tasks x models x regimes x seeds) runs with
//   train_limit = max(1, round(f * N))        (N: the task's training split as the preset makes it)
// into <out>/f<f>/, exactly as `run --set train_limit=...` would (same results.md, cells, resume). train_limit keeps
// a random subset of the training split, fixed by the seed, each smaller fraction's inside the larger's
// (data.cpp task_data); the validation and test splits are not touched, so every fraction is scored on the same
// examples (lowering train_size instead would regenerate them: the generators draw all three splits from one
// stream). The fraction shrinks what fine-tuning sees and what self-pretraining sees, since SPT pretrains on the
// task's own training inputs; the numbers of steps stay as they are. Then, from every finished cell:
//   <out>/data_scale.md, .json   task x model x fraction: training examples, scratch and SPT test accuracy
//                                (mean ± standard error over seeds) and the SPT gain (paired over seeds)
//   <out>/data_scale.png         the gain against the number of training examples, one line per task x model and
//                                SPT regime, error bars of one standard error
#pragma once
#include <string>
#include <vector>

#include "apps/common/experiment.h"

namespace lra {

struct DataScaleOptions {
  std::string preset = "tiny", out = "runs/lra_benchmark/data_scale";
  std::vector<double> fractions = {1.0, 0.5, 0.25, 0.1};
  std::vector<std::string> tasks, models, regimes = {"scratch", "spt-masked"}, sets;
  std::string seeds;  // empty: the preset's
  int threads = 2;
  bool resume = false, quiet = false;
};

// "f0.25": the folder of a fraction.
std::string fraction_dir(double f);

// Runs every fraction's cells, then writes the joint table and plot. Returns the table.
dl::harness::Table run_data_scale(const dl::harness::Experiment& e, const DataScaleOptions& o);

// The joint table from the finished cells under o.out (what run_data_scale writes at its end).
dl::harness::Table data_scale_table(const DataScaleOptions& o);

// The `data-scale` subcommand on `app`; main() runs it when it was chosen.
class DataScaleCommand {
 public:
  explicit DataScaleCommand(CLI::App& app);
  DataScaleCommand(const DataScaleCommand&) = delete;  // CLI11 holds pointers to the members
  CLI::App* command() const { return cmd_; }
  void run(const dl::harness::Experiment& e) const;

 private:
  CLI::App* cmd_;
  DataScaleOptions opt_;
};

}  // namespace lra
