// apps/fpt/cell.h - one FPT cell (task, arm, seed): the frozen transformer from its source (language, random,
// bit memory) or the LSTM, the arm's trainable set, Adam at a constant lr with clipping (universal-computation's
// trainer), and accuracy on the whole validation and test splits.
#pragma once
#include <string>

#include "apps/common/phase.h"
#include "apps/common/results.h"
#include "apps/common/typed_experiment.h"
#include "config.h"

namespace fpt {

// language, random, bit_memory, or none (the LSTM)
std::string source_of(const std::string& arm);

// One cell with the config the harness resolved for it (apps/common/typed_experiment.h; cell.config is its JSON).
dl::harness::CellResult run_cell(const CellConfig& c, const dl::harness::Cell& cell, const dl::harness::RunContext& ctx);
// The same for a Cell built by hand (tests): its config read from cell.config, every field checked.
inline dl::harness::CellResult run_cell(const dl::harness::Cell& cell, const dl::harness::RunContext& ctx) {
  return run_cell(dl::harness::config_of<CellConfig>(cell), cell, ctx);
}

}  // namespace fpt
