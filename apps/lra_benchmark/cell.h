// apps/lra_benchmark/cell.h - one cell of the table: (task, model, regime, seed) trained end to end on the harness.
//
//   scratch      fine-tune `steps` steps from random weights
//   spt-causal   pretrain `pretrain_steps` on the TRAINING split with next-token prediction (causal mixers),
//   spt-masked   or with masked denoising (mask_prob; CE on masked tokens, L1 on masked continuous positions),
//                then drop the pretraining head, load the backbone into a fresh model (an explicit partial
//                load: head.* may be missing) and fine-tune as scratch does.
//   text-masked  as spt-masked, but pretrained on English text (Debian's fortunes as bytes, data.h's
//                text_corpus_data) instead of the task's training split: a corpus against the task itself.
// Each phase is a harness phase (apps/common/phase.h) checkpointing to <cell>/<phase>/ every checkpoint_every
// steps, so a killed run resumes from its last checkpoint and continues exactly. A regression task (model.h) fine-tunes
// with MSE or L1 on the standardised target and reports val/test RMSE and MAE instead of accuracy. Results: val and test accuracy
// (the whole validation split; test_batches > 0 limits the test split), the best validation accuracy seen during
// fine-tuning, the last pretraining validation loss; <cell>/model.safetensors (with its config) and, for layers
// with a learned kernel, the kernels of the first block (kernels.h).
#pragma once
#include <string>

#include "apps/common/phase.h"
#include "apps/common/results.h"
#include "config.h"
#include "model.h"
#include "optim/adam.h"

namespace lra {

// One cell with the config the harness resolved for it (apps/common/typed_experiment.h; cell.config is its JSON).
dl::harness::CellResult run_cell(const CellConfig& c, const dl::harness::Cell& cell, const dl::harness::RunContext& ctx);

// Evaluate a saved model (the fine-tuned model.safetensors of a cell) on a split: returns accuracy, or for a regression
// task the RMSE in the target's units.
double evaluate_checkpoint(const CellConfig& c, const std::string& model_path, const std::string& split);

// A phase's optimizer: AdamW at lr; the parameters the layers ask for (SSM A, B, dt) get ssm_lr and no weight
// decay, norms, biases and embeddings no weight decay.
dl::optim::AdamW make_optimizer(LraModel& m, const CellConfig& c, double lr);

}  // namespace lra
