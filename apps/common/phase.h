// apps/common/phase.h - one training phase, the loop every app runs: steps with gradient accumulation, clipping,
// the schedule, periodic evaluation, checkpoints, the progress bar, and exact resume.
//
//   for step in [start, steps):
//     lr = schedule(step)
//     for micro in [0, accum): loss = loss_fn(next batch) / accum; backward          (gradients add up)
//     clip the global gradient norm; optimizer step; zero the gradients
//     every log_every steps: a row of metrics.csv (the mean training loss since the previous row, the lr)
//     every eval_every steps and at the end: eval(), in that step's row and on the curve
//     every checkpoint_every steps and at the end: checkpoint (model, optimizer, step, data position, RNGs, curve)
//     SIGINT / SIGTERM: checkpoint now and throw Interrupted; --resume continues from it
//     a loss that is NaN or infinite: stop before the update with an error naming the step (the checkpoints stay)
//     anomaly mode (--anomaly, autograd/anomaly.h): the first op with a NaN/Inf output or gradient, named with the step
//     every batch drawn: token ids, labels and lengths inside PhaseParts::limits, or an error naming the example
//     --profile (ctx.profile): the third step this process runs is timed op by op (autograd/profile.h); the table
//     goes to <cell>/profile_<phase>.md and stderr
// run_phase (phase.cpp) is this loop, one named call per concern; the calls are written out in phase_steps.{h,cpp}.
// The last two checkpoints are kept; a resume that finds the newest one damaged (truncated, corrupt) says so and
// continues from the one before it, losing only the steps between them.
// A phase resumes from the checkpoint in <cell>/<phase name>/ when asked to and continues exactly: same batches
// (the Batcher's position), same dropout masks (the generators' states), same learning rates (the step), and the
// same curve and log (rows logged after the checkpoint are dropped from metrics.csv and logged again; the checkpoint
// keeps the loss sum of the interval the next row averages). So a killed run
// that resumes ends bit-identical to one that never stopped. Phases chain (pretraining, then fine-tuning) with an
// explicit partial load between them: save_backbone / load_backbone.
//
// Data-parallel (ctx.comm with more than one rank; apps/common/data_parallel.h): every rank draws the same global
// batch (so the data order does not depend on the number of ranks) and trains on its rows of it - rank r of W gets
// B/W rows, the first B mod W ranks one more - with its loss weighted by its share n_r / B, so the summed gradient is
// the global batch's. Rank 0's parameters are broadcast first; gradients are all-reduced during the backward;
// clipping uses the global norm; rank 0 alone writes checkpoints and logs. Dropout draws a separate stream per rank
// and step (seeded from the generator's state at the phase start, the step and the rank), so a resume with the same
// ranks is exact; a single process draws as it always did. A stop request on any rank stops every rank at the
// same step.
#pragma once
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "apps/common/batch_check.h"
#include "apps/common/comm.h"
#include "apps/common/data_parallel.h"
#include "apps/common/results.h"
#include "nn/module.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "tasks/batching.h"

namespace dl::harness {

// A run stopped before the end of a phase: by a signal (after writing a checkpoint) or by stop_after (tests).
struct Interrupted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Where and how a cell runs (the harness fills it; phases and apps read it).
struct RunContext {
  std::string out;    // the run folder
  std::string dir;    // the cell folder, <out>/cells/<cell>
  std::string label;  // "[listops/s4d/scratch seed 0]" for logs
  std::string device = "cpu";
  bool resume = false;                     // continue from checkpoints (otherwise a cell starts afresh)
  bool quiet = false;                      // no progress bar, no log lines
  int stop_after = -1;                     // tests: throw Interrupted after this many steps in this process, as a SIGKILL would
                                           // (no checkpoint is written)
  Communicator* comm = &single_process();  // data-parallel: the ranks of this job (comm.h)
  DataParallelOptions parallel;            // data-parallel: ZeRO-1, bucket size (data_parallel.h)
  bool profile = false;                    // time one step op by op (--profile)
  std::string app;                         // the experiment's name ("lra_benchmark"): a model file says which app wrote it
  std::string metrics_csv() const { return dir + "/metrics.csv"; }
  bool writer() const { return comm->rank() == 0; }  // only rank 0 writes files and logs
};

struct PhaseSpec {
  std::string name;  // "pretrain", "finetune": the checkpoint folder <cell>/<name> and the csv's phase
  int steps = 0;
  int accum = 1;             // micro-batches per optimizer step
  double clip = 0;           // max global gradient norm; 0: no clipping
  int eval_every = 0;        // evaluate every k steps (and after the last); 0: only after the last
  int checkpoint_every = 0;  // checkpoint every k steps (and after the last); 0: only after the last
  // A row of metrics.csv every k steps (and at every evaluation) with the mean training loss of the steps since the
  // previous row and the lr. 0: steps / 50 (at least 1) - 50 to 100 rows for a phase of 50 steps or more, one per
  // step below that. Cheap: one line appended per row.
  int log_every = 0;
};

// A finished cell's model, <ctx.dir>/model.safetensors (rank 0 only), with the metadata its app (and explain,
// apps/explain) rebuilds it from: "dl.app" = ctx.app, "dl.cell" = the cell's key, "dl.config" = its config as JSON.
void save_cell_model(const RunContext& ctx, const nn::Module& m, const std::string& cell_key, const json& config);
// What a command's --cell names: a cell folder -> its model.safetensors; a file as it is.
std::string cell_model_file(const std::string& cell_or_file);

// The log_every a phase uses (spec.log_every, or its default when 0).
int log_interval(const PhaseSpec& spec);

struct Step {
  int step = 0;   // the optimizer step (0-based)
  int micro = 0;  // the micro-batch within it (< accum)
  int rank = 0;   // data-parallel: this rank, whose shard of the global batch the loss sees (draw per-rank noise); 0 on
                  // every rank for a whole-batch loss (PhaseParts::whole_batch_loss)
};

// What eval() measured; val_loss NaN / accuracy -1 where it does not measure it.
struct EvalPoint {
  double val_loss = std::numeric_limits<double>::quiet_NaN();
  double accuracy = -1;
};

// What a phase trains. Everything is held by reference and must outlive run_phase.
struct PhaseParts {
  nn::Module* model = nullptr;
  optim::Optimizer* opt = nullptr;
  optim::Schedule schedule{"constant", [](int64_t, double base_lr) { return base_lr; }};
  tasks::Batcher* batches = nullptr;
  std::function<Var(const tasks::Batch&, const Step&)> loss;  // one micro-batch's mean loss (a scalar)
  std::function<EvalPoint()> eval;                            // on the validation split; may be empty
  std::vector<std::pair<std::string, Generator*>> rngs;       // saved and restored with checkpoints (dropout)
  BatchLimits limits;  // the model's vocabulary, classes and positions, checked on every batch (batch_check.h); 0: not checked
  // Why the loss of a batch is not the mean of its examples' losses (in-batch negatives, a ranking over every pair
  // of the batch), or "" when it is. Such a loss cannot be split over data-parallel ranks: each rank's shard would
  // see fewer negatives and train on another loss. With it set, every rank computes the whole batch with the same
  // random streams, weighted 1/W: the update one process makes (dropout's draw aside), with no speed-up; rank 0 says so.
  std::string whole_batch_loss;
};

struct PhaseResult {
  double final_loss = 0;  // the smoothed training loss at the end (an EMA, 0.95 per step; the progress bar's)
  int steps_run = 0;      // steps executed in this process (for steps/s)
  double seconds = 0;
  int start = 0;            // the step this process started from (> 0 after a resume)
  double comm_seconds = 0;  // data-parallel: time spent waiting on gradient and parameter communication
};

// Runs the phase, appending its evaluations to `curve` (which a resume replaces by the checkpoint's) and every
// log_every steps a row to <cell>/metrics.csv (results.h). The curve holds the evaluation rows only: apps take
// their metrics from it (best validation accuracy or loss), and the step-level log is metrics.csv.
PhaseResult run_phase(const PhaseSpec& spec, PhaseParts& parts, const RunContext& ctx, std::vector<CurvePoint>& curve);

// One update after the gradients are in: clip to `clip` (0: no clipping), optimizer step, zero the gradients.
void apply_update(nn::Module& m, optim::Optimizer& opt, double clip);

// The curve saved with a finished phase's last checkpoint (empty when the folder has none): a resumed cell gets the
// curve of a phase it does not rerun.
std::vector<CurvePoint> saved_curve(const std::string& phase_dir);

// ---- chaining phases ----
// Save the weights of `m` whose names start with none of `drop` (e.g. a pretraining head) as safetensors; with
// several ranks rank 0 writes and every rank waits until it has.
void save_backbone(const nn::Module& m, const std::string& path, const std::vector<std::string>& drop,
                   const std::map<std::string, std::string>& metadata = {}, Communicator& comm = single_process());
// Load such a file into `m`; names starting with one of `allow_missing` may be absent (e.g. a fresh head).
nn::LoadReport load_backbone(nn::Module& m, const std::string& path, const std::vector<std::string>& allow_missing);

}  // namespace dl::harness
