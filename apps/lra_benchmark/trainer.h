// apps/lra_benchmark/trainer.h - one cell of the table: (task, model, regime) trained end to end.
//
//   scratch      fine-tune `steps` steps from random weights
//   spt-causal   pretrain `pretrain_steps` on the TRAINING split with next-token prediction (causal mixers),
//   spt-masked   or with masked denoising (mask_prob; CE on masked tokens, L1 on masked continuous positions),
//                then drop the pretraining head, load the backbone into a fresh model (an explicit partial
//                load: head.* may be missing) and fine-tune as scratch does.
// Each phase checkpoints to <cell>/<phase>/ every checkpoint_every steps (model, AdamW moments, step, RNGs,
// data position, learning curve), so a killed run resumes from its last checkpoint and continues exactly.
// A finished cell writes <cell>/result.json last (atomically); a sweep with --resume skips such cells.
#pragma once
#include <string>
#include <vector>

#include "config.h"
#include "model.h"
#include "optim/adam.h"
#include "report.h"
#include "tasks/dataset.h"

namespace lra {

struct RunOptions {
  std::string out = "runs/lra";
  bool resume = false;
  bool quiet = false;      // no progress bar (tests)
  int threads = 0;         // 0: leave OpenMP's default
  int stop_after = -1;     // tests: stop (throw Interrupted) after this many steps in this process, as a kill would
};

struct Interrupted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Train and evaluate one cell; returns its result (also written to <cell>/result.json).
CellResult run_cell(const CellConfig& c, const RunOptions& o);

// Evaluate a saved model (the fine-tuned model.safetensors of a cell) on a split: returns accuracy.
double evaluate_checkpoint(const CellConfig& c, const std::string& model_path, const std::string& split);

// The task's data for a config, generated once per process and shared by the cells of a sweep.
const dl::tasks::TaskData& task_data(const CellConfig& c);

// The first block's SSM kernel summarised as in Amos et al.'s Figure 4: for each lag l < L, the largest |K[c, l]|
// over channels c and both directions. Empty for models without an SSM layer (Transformer, ...).
std::vector<float> kernel_envelope(LraModel& m, int64_t L);

struct KernelHistory {
  std::vector<float> init, pretrained;  // kernel_envelope before training and after self-pretraining (may be empty)
};

// The learned convolution kernel of the first block's SSM layer (S4, S4D, DLR; nothing for other models), lags
// < min(L, 512): <cell>/kernels.dat holds its first 4 channels, <cell>/kernels_max.dat its envelope at
// initialisation, after pretraining and now (the columns hist has), kernels.png plots both when gnuplot is present.
void write_learned_kernels(LraModel& m, const std::string& cdir, int64_t L, const KernelHistory& hist = {});

// One update on `loss` as every training step takes it: backward, gradient clipping at c.clip, AdamW, zeroed grads.
void optimizer_step(LraModel& m, dl::optim::AdamW& opt, const CellConfig& c, const dl::Var& loss);

// The model's input/output shape for a task: vocab or features, classes, two towers, and the longest sequence of
// any split (the positions table's size).
TaskShape shape_of(const dl::tasks::TaskData& d);

// A phase's optimizer: AdamW at lr; the SSM parameters (A, B, dt, Lambda) get ssm_lr and no weight decay, norms,
// biases and embeddings no weight decay.
dl::optim::AdamW make_optimizer(LraModel& m, const CellConfig& c, double lr);

}  // namespace lra
