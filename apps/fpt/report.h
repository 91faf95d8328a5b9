// apps/fpt/report.h - the FPT table (task x arm: trainable parameters, accuracy, the paper's number beside it,
// steps to the best validation accuracy) and its plots (learning curves per task, test accuracy bars).
#pragma once
#include <string>
#include <vector>

#include "apps/common/config.h"
#include "apps/common/report.h"
#include "apps/common/results.h"

namespace fpt {

// Lu et al.'s Table 1 (fpt, full, lstm) and Table 2 (random, bitmem) for a task, as recalled in
// shared/research/wave2.md (UNVERIFIED: not checked against the PDF); NaN where the paper has none.
double paper_accuracy(const std::string& task, const std::string& arm);

dl::harness::Table fpt_report(const std::string& out, const dl::harness::Preset& p,
                              const std::vector<dl::harness::CellResult>& rs);

}  // namespace fpt
