// apps/common/phase_steps.cpp - the named steps of run_phase, in the order its loop calls them (see phase_steps.h).
#include "apps/common/phase_steps.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "apps/common/device.h"
#include "apps/common/signals.h"
#include "autograd/anomaly.h"
#include "optim/checkpoint.h"
#include "tensor/optim_kernels.h"
#include "tensor/safetensors.h"

namespace dl::harness::phase_steps {

static std::string exact(double x) {  // round-trips a double through text
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

// A 64-bit mix (splitmix64's finaliser) for the per-rank dropout streams.
static uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::string curve_to_text(const std::vector<CurvePoint>& curve) {
  json c = json::array();
  for (auto& p : curve) c.push_back(p.to_json());
  return c.dump();
}
std::vector<CurvePoint> curve_from_text(const std::string& text) {
  std::vector<CurvePoint> curve;
  for (auto& p : json::parse(text)) curve.push_back(CurvePoint::from_json(p));
  return curve;
}

// The model goes to its device before a resume loads into it (device.h). With several ranks, DataParallel hooks
// the gradients; each generator's stream base is taken before anything draws from it.
PhaseRun::PhaseRun(const PhaseSpec& spec, PhaseParts& parts, const RunContext& ctx, std::vector<CurvePoint>& curve)
    : spec(spec), parts(parts), ctx(ctx), curve(curve), dir(ctx.dir + "/" + spec.name), label(ctx.label + " " + spec.name),
      rank(ctx.comm->rank()), world(ctx.comm->size()), quiet(ctx.quiet || rank != 0), log_every(log_interval(spec)) {
  if (spec.accum < 1) throw std::invalid_argument(label + ": accum must be >= 1, found " + std::to_string(spec.accum));
  place_model(*parts.model, parse_device(ctx.device));
  if (world > 1) par = std::make_unique<DataParallel>(*parts.model, *parts.opt, *ctx.comm, ctx.parallel);
  for (auto& [name, g] : parts.rngs) stream_base.push_back(mix(std::hash<std::string>{}(g->state_string())));
  stream_rank = parts.whole_batch_loss.empty() ? rank : 0;
  if (world > 1 && !parts.whole_batch_loss.empty() && rank == 0)
    std::cerr << label << ": the loss is not a mean over the batch's examples (" << parts.whole_batch_loss << "), so each of the "
              << world << " ranks computes all of every batch: the update of one process, no data-parallel speed-up\n";
}

// ---- resume -------------------------------------------------------------------------------------------------------

// The newest checkpoint that loads into the model and optimizer (a damaged newest one is named and the one before
// it used), or none. When none loads, nothing intact would be lost by starting the phase again, which is what
// resuming asks for: a failed load changes nothing, the damaged files go aside (by the writer, after every rank has
// tried them) and the phase's metrics.csv rows go with them. Every rank reads the same files.
static std::optional<optim::TrainingState> load_checkpoint(PhaseRun& run) {
  std::vector<std::string> skipped;
  std::optional<optim::TrainingState> loaded;
  try {
    loaded = optim::load_latest_good_checkpoint(run.dir, *run.parts.model, *run.parts.opt, &skipped);
  } catch (const optim::CheckpointError& e) {
    if (run.par) run.ctx.comm->barrier();
    if (run.ctx.writer()) {
      const std::string aside = optim::set_aside_checkpoints(run.dir);
      std::cerr << run.label << ": warning: " << e.what() << "\n"
                << run.label << ": starting this phase again from step 0; the damaged checkpoint files are kept in " << aside
                << "\n";
      truncate_metrics_csv(run.ctx.metrics_csv(), run.spec.name, 0);
    }
  }
  if (loaded && run.ctx.writer())
    for (auto& s : skipped) std::cerr << run.label << ": warning: " << s << "; resuming from the previous checkpoint\n";
  return loaded;
}

// The harness's own entries of the training state: data position, generators, curve, loss EMA and the open log
// interval ("sum steps"; absent in checkpoints written before it existed). A damaged one is named, never a crash.
static void restore_training_state(PhaseRun& run, const optim::TrainingState& st) {
  try {
    run.parts.batches->set_position(tasks::DataPosition::from_string(st.data_position));
    for (auto& [name, g] : run.parts.rngs) st.restore_rng(name, *g);
    run.curve = curve_from_text(st.extra.at("curve"));
    run.loss_ema = std::stod(st.extra.at("loss_ema"));
    auto it = st.extra.find("loss_interval");
    if (it != st.extra.end() && std::sscanf(it->second.c_str(), "%lf %d", &run.interval_sum, &run.interval_steps) != 2)
      throw std::runtime_error("loss_interval '" + it->second + "' is not 'sum steps'");
  } catch (const std::exception& e) {
    const std::string what = "the checkpoint's training state is damaged (data position, generators, curve, loss_ema or "
                             "loss_interval): ";
    throw optim::CheckpointError(run.dir + ": " + what + e.what());
  }
}

// With ctx.resume and a checkpoint in <cell>/<phase>: continue from it. The metrics.csv rows logged after it are
// dropped; the steps between it and the stop run again and log them again.
void resume(PhaseRun& run) {
  if (!run.ctx.resume || !optim::latest_checkpoint(run.dir)) return;
  const std::optional<optim::TrainingState> st = load_checkpoint(run);
  if (!st) return;
  if (run.par) run.par->keep_own_optimizer_state();
  run.start = (int)st->step;
  restore_training_state(run, *st);
  if (run.ctx.writer()) truncate_metrics_csv(run.ctx.metrics_csv(), run.spec.name, run.start);
  if (!run.quiet && run.start < run.spec.steps)
    std::cerr << run.label << ": resumed from step " << run.start << " (" << run.dir << ")\n";
}

// ---- one step -----------------------------------------------------------------------------------------------------

StepProfile::StepProfile(const PhaseRun& run, int step) {
  if (run.ctx.profile && step == std::min(run.start + 2, run.spec.steps - 1)) scope_.emplace();
}

void StepProfile::mark() {
  if (scope_) profile_mark();
}

// The op table (the optimizer update's time below it) to <cell>/profile_<phase>.md, and its top 15 rows to stderr.
void StepProfile::finish(const PhaseRun& run, int step, Clock::time_point update_start) {
  if (!scope_) return;
  const double update_ms = std::chrono::duration<double, std::milli>(Clock::now() - update_start).count();
  scope_.reset();
  if (!run.ctx.writer()) return;
  char update[96];
  std::snprintf(update, sizeof update, "Optimizer update (clipping, step, zero_grad; not in the table): %.2f ms.\n", update_ms);
  const std::string title = run.label + ", step " + std::to_string(step + 1) + ": the ops of one training step";
  write_text_atomic(run.ctx.dir + "/profile_" + run.spec.name + ".md", profile_report(title, 0) + update);
  if (!run.ctx.quiet) std::cerr << profile_report(run.label + " step " + std::to_string(step + 1), 15) << update;
}

// The scheduled lr (a function of the step alone, so a resume continues it). Data-parallel: each generator draws a
// stream of its own per rank and step, from its base, so dropout differs between ranks and a resume is exact.
void start_step(PhaseRun& run, int step) {
  optim::apply_schedule(*run.parts.opt, run.parts.schedule, step);
  if (!run.par) return;
  for (size_t i = 0; i < run.parts.rngs.size(); i++)
    run.parts.rngs[i].second->manual_seed(mix(run.stream_base[i] ^ mix(step * 1000003ull + run.stream_rank)));
}

// Every rank draws the same global batch, so the data order does not depend on the number of ranks.
tasks::Batch draw_batch(const PhaseRun& run, int step) {
  tasks::Batch b = run.parts.batches->next();
  check_batch(b, run.parts.limits, run.label + " step " + std::to_string(step));
  return b;
}

// Data-parallel: rank r of W keeps rows [begin, begin + n) of the B, n = B/W (the first B mod W ranks one more), and
// returns n/B: weighted by it, the ranks' summed gradient is the global batch's. One process keeps all: 1. A
// whole-batch loss (PhaseParts::whole_batch_loss): every rank keeps all B rows and returns 1/W.
double rank_rows(const PhaseRun& run, tasks::Batch& b) {
  if (!run.par) return 1.0;
  if (!run.parts.whole_batch_loss.empty()) return 1.0 / run.world;
  const int B = b.batch_size, base = B / run.world, extra = B % run.world;
  const int n = base + (run.rank < extra), begin = run.rank * base + std::min(run.rank, extra);
  if (n == 0)
    throw std::invalid_argument(run.label + ": a batch of " + std::to_string(B) + " leaves rank " + std::to_string(run.rank) +
                                " of " + std::to_string(run.world) + " nothing");
  b = tasks::slice_rows(b, begin, n);
  return (double)n / B;
}

// What a stop before the update keeps: the weights in memory and the last checkpoint (named when there is one).
static std::string nothing_lost(const PhaseRun& run) {
  auto last = run.ctx.writer() ? optim::latest_checkpoint(run.dir) : std::nullopt;
  return "; no update was applied" +
         (last ? "; the last checkpoint (step " + std::to_string(last->step) + ", " + run.dir + ") is intact" : std::string());
}

// loss_fn(b) x weight, then backward: the gradients add up over the micro-batches. Data-parallel: the last
// micro-batch's backward all-reduces them as they complete. Returns the weighted loss. Anomaly mode names the op;
// the step is added here.
double forward_backward(PhaseRun& run, const tasks::Batch& b, const Step& s, double weight) {
  if (run.par && s.micro == run.spec.accum - 1) run.par->arm();
  try {
    Var loss = run.parts.loss(b, s);
    if (weight != 1.0) loss = loss * weight;
    loss.backward();
    return loss.item();
  } catch (const AnomalyError& e) {
    throw AnomalyError(run.label + ": step " + std::to_string(s.step) + ": " + e.what() + nothing_lost(run), e.op, e.pass,
                       e.shape);
  }
}

// The first trainable parameter whose gradient holds a NaN or an infinity, as "name: NaN at element 3 (...)", or ""
// when all are finite. A finite loss can still have such gradients (0 * inf in a backward: a square root or a norm
// at 0, an overflow); an update with them writes NaN weights, and the next checkpoint would keep them. One read of
// the gradients per step (well under a millisecond per million parameters); on a device, a sum of squares there.
static std::string first_non_finite_grad(const nn::Module& m) {
  std::vector<Tensor> on_device;  // one sum over all of them first: one launch and one read back per step
  for (auto& [name, p] : m.named_parameters(true))
    if (p.grad().defined() && p.grad().device() != Device::cpu) on_device.push_back(p.grad());
  const bool device_finite = on_device.empty() || std::isfinite(sum_of_squares_all(on_device));
  for (auto& [name, p] : m.named_parameters(true)) {
    const Tensor& g = p.grad();
    if (!g.defined()) continue;
    if (g.device() == Device::cpu) {
      const std::string bad = non_finite_summary(g);
      if (!bad.empty()) return name + ": " + bad;
    } else if (!device_finite && !std::isfinite(sum_of_squares(g))) {
      return name + ": not finite (on " + device_name(g.device()) + ")";
    }
  }
  return "";
}

// Data-parallel: wait for the reduced gradients (with ZeRO-1, each rank's own segments) and sum the loss over the
// ranks. A NaN or infinity in the loss or in any rank's gradients stops every rank at this step, before the update,
// so the weights in memory and every checkpoint stay finite: a flag summed with the loss says whether a rank saw one.
double global_loss(PhaseRun& run, int step, double loss) {
  if (run.par) run.par->finish();
  const std::string bad_grad = first_non_finite_grad(*run.parts.model);
  double sums[2] = {loss, bad_grad.empty() ? 0.0 : 1.0};
  if (run.par) run.ctx.comm->allreduce_sum(sums, 2);
  const double lv = sums[0];
  if (!std::isfinite(lv))
    throw std::runtime_error(run.label + ": the loss is " + std::to_string(lv) + " at step " + std::to_string(step) +
                             " (lower the lr? --anomaly names the op)" + nothing_lost(run));
  if (sums[1] > 0)
    throw std::runtime_error(run.label + ": step " + std::to_string(step) + ": the loss is finite (" + std::to_string(lv) +
                             ") but a gradient is not: " + (bad_grad.empty() ? "found on another rank" : bad_grad) +
                             " (--anomaly names the op that made it)" + nothing_lost(run));
  return lv;
}

// Clipping by the global norm (over the ranks when data-parallel), the optimizer's step, zeroed gradients; with
// ZeRO-1 each rank then broadcasts the parameters it owns.
void update(PhaseRun& run) {
  if (!run.par) return apply_update(*run.parts.model, *run.parts.opt, run.spec.clip);
  run.par->clip(run.spec.clip);
  run.parts.opt->step();
  run.parts.opt->zero_grad();
  run.par->after_step();
}

void record_loss(PhaseRun& run, int step, double loss) {
  run.loss_ema = step == 0 ? loss : 0.95 * run.loss_ema + 0.05 * loss;
  run.interval_sum += loss, run.interval_steps++;
  run.steps_run++;
}

// After `done` steps, on log_every and evaluation steps (every eval_every and the last): one metrics.csv row with the
// interval's mean loss, the lr and the evaluation if any, which also goes on the curve. eval() runs on every rank
// (apps may split it over them); the model is back in training mode after it. Returns the accuracy (-1: none).
double log_and_evaluate(PhaseRun& run, int done) {
  const PhaseSpec& spec = run.spec;
  const bool evaluate = (spec.eval_every > 0 && done % spec.eval_every == 0) || done == spec.steps;
  if (!evaluate && done % run.log_every != 0) return -1;
  CurvePoint p{spec.name, done, run.interval_sum / run.interval_steps};
  p.lr = run.parts.opt->lr();
  run.interval_sum = 0, run.interval_steps = 0;
  if (evaluate) {
    EvalPoint e = run.parts.eval ? run.parts.eval() : EvalPoint{};
    run.parts.model->train();
    p.val_loss = e.val_loss, p.accuracy = e.accuracy;
    run.curve.push_back(p);
  }
  if (run.ctx.writer()) append_metrics_csv(run.ctx.metrics_csv(), run.ctx.label, p);
  return evaluate ? p.accuracy : -1;
}

bool checkpoint_due(const PhaseSpec& spec, int done) {
  return (spec.checkpoint_every > 0 && done % spec.checkpoint_every == 0) || done == spec.steps;
}

// Model, optimizer (ZeRO-1: gathered on rank 0 first) and the training state: the step, the data position, the
// generators, the curve, the loss EMA and the open interval. Only rank 0 writes. The previous checkpoint stays until
// this one is complete, for a resume that finds this one damaged.
void save_checkpoint(PhaseRun& run, int done) {
  if (run.par) run.par->gather_optimizer_state();
  if (run.ctx.writer()) {
    optim::TrainingState st;
    st.step = done;
    st.data_position = run.parts.batches->position().to_string();
    for (auto& [name, g] : run.parts.rngs) st.save_rng(name, *g);
    st.extra["curve"] = curve_to_text(run.curve);
    st.extra["loss_ema"] = exact(run.loss_ema);
    st.extra["loss_interval"] = exact(run.interval_sum) + " " + std::to_string(run.interval_steps);
    optim::CheckpointOptions co;
    co.keep_last = 2;
    optim::save_checkpoint(run.dir, *run.parts.model, *run.parts.opt, st, co);
  }
  if (run.par) run.par->keep_own_optimizer_state();
}

// A SIGINT / SIGTERM on any rank stops every rank at this step (the flag is summed over them), after a checkpoint.
// Tests' stop_after stops without one, as a SIGKILL would. Neither stops a phase at its last step.
void stop_if_asked(PhaseRun& run, int done, bool saved, Progress& bar) {
  double stop = stop_requested() ? 1 : 0;
  if (run.par) run.ctx.comm->allreduce_sum(&stop, 1);
  if (done < run.spec.steps && stop > 0) {
    if (!saved) save_checkpoint(run, done);
    bar.finish();
    throw Interrupted(run.label + ": interrupted at step " + std::to_string(done) + " of " + std::to_string(run.spec.steps) +
                      "; a checkpoint is in " + run.dir + ", run again with --resume to continue");
  }
  if (run.ctx.stop_after >= 0 && run.steps_run >= run.ctx.stop_after && done < run.spec.steps)
    throw Interrupted(run.label + ": stopped after " + std::to_string(run.steps_run) + " steps (stop_after)");
}

// ---- after the last step ------------------------------------------------------------------------------------------

PhaseResult finish(const PhaseRun& run, Clock::time_point t0) {
  PhaseResult r;
  r.final_loss = run.loss_ema;
  r.steps_run = run.steps_run;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.start = run.start;
  if (run.par) r.comm_seconds = run.par->comm_seconds();
  return r;
}

}  // namespace dl::harness::phase_steps
