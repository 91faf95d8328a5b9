// apps/fpt/sweep.h - `fpt sweep-lr`: the learning-rate sweep the paper lacked (Rothermel et al. 2021 found FPT's edge
// over full training to be an artefact of one untuned lr, 1e-3). Each task x arm runs at every lr over the seeds;
// the best lr per arm is chosen on the validation split (mean over seeds) and its test accuracy reported with its
// standard error; a plot per task shows validation accuracy against lr per arm (log x, error bars).
//   fpt sweep-lr [--preset tiny] [--tasks bit_xor] [--arms fpt,full,random] [--lrs 1e-4,3e-4,1e-3,3e-3]
//                [--seeds 0,1,2] [--set k=v].. [--out runs/fpt_sweep] [--resume]
// Output: <out>/lr_<lr>/ (a run folder per lr), <out>/sweep.{md,json}, <out>/plots/lr_<task>.png.
#pragma once
#include <string>
#include <vector>

#include "apps/common/experiment.h"

namespace fpt {

class SweepCommand {
 public:
  SweepCommand(CLI::App& app, const dl::harness::Experiment& e);
  SweepCommand(const SweepCommand&) = delete;
  CLI::App* command() const { return cmd_; }
  void run() const;

 private:
  CLI::App* cmd_;
  const dl::harness::Experiment& e_;
  std::string preset_ = "tiny", out_ = "runs/fpt_sweep", seeds_ = "0,1,2";
  std::vector<std::string> tasks_, arms_, sets_;
  std::string lrs_ = "1e-4,3e-4,1e-3,3e-3";  // parse_real_list names an item that is not a positive number
  bool resume_ = false, quiet_ = false;
  int threads_ = 2;
};

}  // namespace fpt
