// apps/lra_benchmark/report.h - the LRA table and plots from a run's finished cells.
//
//   results.md      task x model x regime: seeds, val and test accuracy (mean ± standard error over seeds; one
//                   seed: ± the binomial error of the split), the SPT gain over scratch (paired over seeds), params,
//                   wall time, steps/s
//   plots/<task>    training loss (every log_every steps, from each cell's metrics.csv) and validation accuracy vs
//                   step, every model and regime: the mean over seeds with a band of one standard error,
//                   pretraining then fine-tuning on one step axis, the boundary marked
//   plots/test_accuracy   test accuracy per task/model, one bar per regime, with error bars; the axis fits the bars
//   plots/spt_gain  the table's paired SPT gain per task/model and regime, with its error bar, around 0
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
