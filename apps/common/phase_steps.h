// apps/common/phase_steps.h - the named steps of run_phase (phase.cpp), one function per concern of phase.h's loop:
//
//   PhaseRun run(...)            check the spec, place the model on its device, join the data-parallel ranks
//   resume(run)                  the newest intact checkpoint of <cell>/<phase>: weights, optimizer, data position,
//                                generators, curve, the loss EMA and the open log interval
//   StepProfile profile(run, s)  --profile: the ops of this step, if it is the one profiled
//   start_step(run, s)           the step's lr; data-parallel: the per-rank dropout streams
//   draw_batch(run, s)           the next global batch, its ids, labels and lengths checked against the model's limits
//   rank_rows(run, b)            data-parallel: this rank's rows of the batch and their share of it (1 alone)
//   forward_backward(...)        one micro-batch's loss, weighted, differentiated; the gradients add up
//   global_loss(run, s, loss)    the step's loss over the ranks; a NaN or infinity in it or a gradient: stop here
//   update(run)                  clip the global gradient norm, optimizer step, zero the gradients
//   record_loss(run, s, loss)    the progress bar's EMA and the open metrics.csv interval
//   log_and_evaluate(run, done)  a metrics.csv row every log_every steps, and at evaluations eval() on the curve
//   save_checkpoint(run, done)   model, optimizer and the training state above (rank 0 writes; two are kept)
//   stop_if_asked(...)           SIGINT / SIGTERM on any rank: checkpoint and throw Interrupted; tests' stop_after
//   finish(run, t0)              the PhaseResult
//
// Internal to the harness: apps call run_phase (phase.h). What phase.h promises (bit-identical resume, the same
// batches whatever the number of ranks, no update from a non-finite step) is kept by these functions together;
// each one's comment says which part it holds.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/common/phase.h"
#include "apps/common/progress.h"
#include "autograd/profile.h"

namespace dl::harness::phase_steps {

using Clock = std::chrono::steady_clock;

// One run of a phase in this process: what it was given, and what it carries from step to step. The four numbers
// under "saved" go into every checkpoint, so a resumed run continues them exactly.
struct PhaseRun {
  PhaseRun(const PhaseSpec& spec, PhaseParts& parts, const RunContext& ctx, std::vector<CurvePoint>& curve);

  const PhaseSpec& spec;
  PhaseParts& parts;
  const RunContext& ctx;
  std::vector<CurvePoint>& curve;  // the evaluation rows; a resume replaces it by the checkpoint's
  std::string dir, label;          // <cell>/<phase> (its checkpoints), "[cell] phase" (its messages)
  int rank = 0, world = 1;
  int stream_rank = 0;                // the rank whose shard and random streams this process draws (0 for a whole-batch loss)
  bool quiet = false;                 // no bar and no log lines: ctx.quiet, or not rank 0
  int log_every = 1;                  // a metrics.csv row every k steps (log_interval)
  std::unique_ptr<DataParallel> par;  // with more than one rank; null alone
  std::vector<uint64_t> stream_base;  // data-parallel dropout: one per generator, from its state at the start
  int start = 0;                      // the first step this process runs (> 0 after a resume)
  int steps_run = 0;                  // steps run in this process
  double loss_ema = 0;                // saved: the smoothed training loss (progress bar, final_loss)
  double interval_sum = 0;            // saved: the losses of the steps since the last metrics.csv row
  int interval_steps = 0;             // saved: how many
};

// ---- before the first step ----
void resume(PhaseRun& run);

// ---- one step ----
// --profile: the third step this process runs (after the first steps' allocations), or the phase's last if fewer,
// timed op by op from its start to the end of its update; the table goes to <cell>/profile_<phase>.md and stderr.
class StepProfile {
 public:
  StepProfile(const PhaseRun& run, int step);
  void mark();                                                                 // drawing the batch is not the first op's time
  void finish(const PhaseRun& run, int step, Clock::time_point update_start);  // after the update: write the table

 private:
  std::optional<ProfileScope> scope_;
};

void start_step(PhaseRun& run, int step);
tasks::Batch draw_batch(const PhaseRun& run, int step);
double rank_rows(const PhaseRun& run, tasks::Batch& b);
double forward_backward(PhaseRun& run, const tasks::Batch& b, const Step& s, double weight);
double global_loss(PhaseRun& run, int step, double loss);
void update(PhaseRun& run);
void record_loss(PhaseRun& run, int step, double loss);
double log_and_evaluate(PhaseRun& run, int done);
bool checkpoint_due(const PhaseSpec& spec, int done);
void save_checkpoint(PhaseRun& run, int done);
void stop_if_asked(PhaseRun& run, int done, bool saved, Progress& bar);

// ---- after the last ----
PhaseResult finish(const PhaseRun& run, Clock::time_point t0);

// The curve as a checkpoint's "extra.curve" entry (a JSON array of points) and back.
std::string curve_to_text(const std::vector<CurvePoint>& curve);
std::vector<CurvePoint> curve_from_text(const std::string& text);

}  // namespace dl::harness::phase_steps
