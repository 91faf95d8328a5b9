// apps/lra_benchmark/report.h - the LRA table and plots from a run's finished cells.
//
//   results.md      task x model x regime: seeds, val and test accuracy (mean ± standard error over seeds; one
//                   seed: ± the binomial error of the split), the SPT gain over scratch (paired over seeds), params,
//                   wall time, steps/s
//   plots/<task>    fine-tuning validation accuracy vs step, every model and regime (mean over seeds, error bars)
//   plots/test_accuracy   test accuracy per task/model, one bar per regime, with error bars
// Where each file lives and what a cell folder holds: apps/common/results.h; the kernels: kernels.h.
#pragma once
#include <string>
#include <vector>

#include "apps/common/config.h"
#include "apps/common/report.h"
#include "apps/common/results.h"
#include "apps/common/stats.h"

namespace lra {

// A regression metric over seeds: "mean ± se" (2 decimals), or with one seed (no error known) "mean (1 seed)".
std::string format_regression(const dl::harness::MeanSE& m, bool sign = false);

dl::harness::Table lra_report(const std::string& out, const dl::harness::Preset& p,
                              const std::vector<dl::harness::CellResult>& rs);

}  // namespace lra
