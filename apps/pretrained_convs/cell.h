// apps/pretrained_convs/cell.h - one cell (task, model, regime, seed): the model with its parameter budget matched,
// the pretrained weights when the regime asks for them (pretrain.h), fine-tuning with teacher forcing (AdamW,
// inverse square root after warmup), and exact-match accuracy of greedy decoding on the whole validation and test
// splits (plus the held-out combinations for the compositional task, and the share of outputs that are no label).
#pragma once
#include "apps/common/phase.h"
#include "apps/common/results.h"
#include "config.h"

namespace pconv {

// One cell with the config the harness resolved for it (apps/common/typed_experiment.h; cell.config is its JSON).
dl::harness::CellResult run_cell(const CellConfig& c, const dl::harness::Cell& cell, const dl::harness::RunContext& ctx);

}  // namespace pconv
