// apps/common/phase.cpp - the training loop (see phase.h).
#include "apps/common/phase.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "apps/common/data_parallel.h"
#include "apps/common/device.h"
#include "apps/common/progress.h"
#include "apps/common/signals.h"
#include "autograd/anomaly.h"
#include "autograd/profile.h"
#include "optim/checkpoint.h"
#include "optim/clip.h"
#include "tensor/optim_kernels.h"
#include "tensor/safetensors.h"

namespace dl::harness {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

void apply_update(nn::Module& m, optim::Optimizer& opt, double clip) {
  if (clip > 0) optim::clip_grad_norm(m.parameters(true), clip);
  opt.step();
  opt.zero_grad();
}

// --profile: the op table of the step just profiled, with the update's time, to <cell>/profile_<phase>.md and stderr.
static void write_profile(const RunContext& ctx, const PhaseSpec& spec, int step, double update_ms) {
  if (!ctx.writer()) return;
  char update[96];
  std::snprintf(update, sizeof update, "Optimizer update (clipping, step, zero_grad; not in the table): %.2f ms.\n", update_ms);
  const std::string text = profile_report(ctx.label + " " + spec.name + ", step " + std::to_string(step + 1) +
                                              ": the ops of one training step",
                                          0) +
                           update;
  write_text_atomic(ctx.dir + "/profile_" + spec.name + ".md", text);
  if (!ctx.quiet) std::cerr << profile_report(ctx.label + " " + spec.name + " step " + std::to_string(step + 1), 15) << update;
}

// The curve as the checkpoint's "extra.curve" entry: a JSON array of points.
static std::string curve_to_text(const std::vector<CurvePoint>& curve) {
  json c = json::array();
  for (auto& p : curve) c.push_back(p.to_json());
  return c.dump();
}
static std::vector<CurvePoint> curve_from_text(const std::string& text) {
  std::vector<CurvePoint> curve;
  for (auto& p : json::parse(text)) curve.push_back(CurvePoint::from_json(p));
  return curve;
}

std::vector<CurvePoint> saved_curve(const std::string& phase_dir) {
  auto ck = optim::latest_checkpoint(phase_dir);
  if (!ck) return {};
  TensorFile f = load_safetensors(ck->state_path);
  auto it = f.metadata.find("extra.curve");
  return it == f.metadata.end() ? std::vector<CurvePoint>{} : curve_from_text(it->second);
}

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

// What a stop before the update keeps: the weights in memory and the last checkpoint (named when there is one).
static std::string nothing_lost(const RunContext& ctx, const std::string& dir) {
  auto last = ctx.writer() ? optim::latest_checkpoint(dir) : std::nullopt;
  return "; no update was applied" +
         (last ? "; the last checkpoint (step " + std::to_string(last->step) + ", " + dir + ") is intact" : std::string());
}

int log_interval(const PhaseSpec& spec) { return spec.log_every > 0 ? spec.log_every : std::max(1, spec.steps / 50); }

PhaseResult run_phase(const PhaseSpec& spec, PhaseParts& parts, const RunContext& ctx, std::vector<CurvePoint>& curve) {
  nn::Module& model = *parts.model;
  optim::Optimizer& opt = *parts.opt;
  tasks::Batcher& batches = *parts.batches;
  Communicator& comm = *ctx.comm;
  const int rank = comm.rank(), world = comm.size();
  const bool quiet = ctx.quiet || rank != 0;
  const std::string dir = ctx.dir + "/" + spec.name, label = ctx.label + " " + spec.name;
  if (spec.accum < 1) throw std::invalid_argument(label + ": accum must be >= 1, found " + std::to_string(spec.accum));
  place_model(model, parse_device(ctx.device));  // before a resume loads into it (device.h)
  std::unique_ptr<DataParallel> par;
  if (world > 1) par = std::make_unique<DataParallel>(model, opt, comm, ctx.parallel);
  std::vector<uint64_t> stream_base;  // data-parallel dropout: from the generators' state where the phase starts
  for (auto& [name, g] : parts.rngs) stream_base.push_back(mix(std::hash<std::string>{}(g->state_string())));

  int start = 0;
  double loss_ema = 0;      // the smoothed training loss shown (progress bar, final_loss); saved
  double interval_sum = 0;  // the losses of the steps since the last metrics.csv row; saved
  int interval_steps = 0;
  const int log_every = log_interval(spec);
  std::optional<optim::TrainingState> loaded;
  if (ctx.resume && optim::latest_checkpoint(dir)) {  // every rank reads the same files
    std::vector<std::string> skipped;                 // a damaged newest checkpoint: fall back to the one before
    try {
      loaded = optim::load_latest_good_checkpoint(dir, model, opt, &skipped);
    } catch (const optim::CheckpointError& e) {
      // None loads: nothing intact would be lost by starting the phase again, which is what resuming asks for. A failed
      // load changes nothing; the damaged files go aside (by the writer, after every rank has tried them).
      if (par) comm.barrier();
      if (ctx.writer()) {
        const std::string aside = optim::set_aside_checkpoints(dir);
        std::cerr << label << ": warning: " << e.what() << "\n" << label
                  << ": starting this phase again from step 0; the damaged checkpoint files are kept in " << aside << "\n";
        truncate_metrics_csv(ctx.metrics_csv(), spec.name, 0);
      }
    }
    if (loaded && ctx.writer())
      for (auto& s : skipped) std::cerr << label << ": warning: " << s << "; resuming from the previous checkpoint\n";
  }
  if (loaded) {
    const optim::TrainingState& st = *loaded;
    if (par) par->keep_own_optimizer_state();
    start = (int)st.step;
    try {  // the harness's own entries of the training state: a damaged one is named, never a crash
      batches.set_position(tasks::DataPosition::from_string(st.data_position));
      for (auto& [name, g] : parts.rngs) st.restore_rng(name, *g);
      curve = curve_from_text(st.extra.at("curve"));
      loss_ema = std::stod(st.extra.at("loss_ema"));
      auto it = st.extra.find("loss_interval");  // "sum steps"; absent in checkpoints written before it existed
      if (it != st.extra.end() && std::sscanf(it->second.c_str(), "%lf %d", &interval_sum, &interval_steps) != 2)
        throw std::runtime_error("loss_interval '" + it->second + "' is not 'sum steps'");
    } catch (const std::exception& e) {
      throw optim::CheckpointError(dir + ": the checkpoint's training state is damaged (data position, generators, "
                                   "curve, loss_ema or loss_interval): " + e.what());
    }
    if (ctx.writer()) truncate_metrics_csv(ctx.metrics_csv(), spec.name, start);  // rows logged after the checkpoint come again
    if (!quiet && start < spec.steps) std::cerr << label << ": resumed from step " << start << " (" << dir << ")\n";
  }
  if (par) par->broadcast_parameters();
  auto save = [&](int step) {
    if (par) par->gather_optimizer_state();
    if (ctx.writer()) {
      optim::TrainingState st;
      st.step = step;
      st.data_position = batches.position().to_string();
      for (auto& [name, g] : parts.rngs) st.save_rng(name, *g);
      st.extra["curve"] = curve_to_text(curve);
      st.extra["loss_ema"] = exact(loss_ema);
      st.extra["loss_interval"] = exact(interval_sum) + " " + std::to_string(interval_steps);
      optim::CheckpointOptions co;
      co.keep_last = 2;  // the previous one stays until the next is complete, for a resume that finds this one damaged
      optim::save_checkpoint(dir, model, opt, st, co);
    }
    if (par) par->keep_own_optimizer_state();
  };

  model.train();
  Progress bar(label, spec.steps, start, quiet);
  PhaseResult r;
  r.start = start;
  auto t0 = Clock::now();
  // --profile: the third step of this process (after the first steps' allocations), or the last one if fewer
  const int profile_step = ctx.profile ? std::min(start + 2, spec.steps - 1) : -1;
  for (int step = start; step < spec.steps; step++) {
    comm.heartbeat(step);
    std::optional<ProfileScope> profile;
    double update_ms = 0;
    if (step == profile_step) profile.emplace();
    optim::apply_schedule(opt, parts.schedule, step);
    if (par)
      for (size_t i = 0; i < parts.rngs.size(); i++)
        parts.rngs[i].second->manual_seed(mix(stream_base[i] ^ mix(step * 1000003ull + rank)));
    double lv = 0;
    for (int micro = 0; micro < spec.accum; micro++) {
      tasks::Batch b = batches.next();
      check_batch(b, parts.limits, label + " step " + std::to_string(step));
      if (profile) profile_mark();  // drawing the batch is not the first op's time
      double scale = 1.0 / spec.accum;
      if (par) {  // this rank's rows of the global batch, weighted by their share of it
        const int B = b.batch_size, base = B / world, extra = B % world;
        const int n = base + (rank < extra), begin = rank * base + std::min(rank, extra);
        if (n == 0)
          throw std::invalid_argument(label + ": a batch of " + std::to_string(B) + " leaves rank " + std::to_string(rank) +
                                      " of " + std::to_string(world) + " nothing");
        b = tasks::slice_rows(b, begin, n);
        scale *= (double)n / B;
        if (micro == spec.accum - 1) par->arm();
      }
      try {
        Var loss = parts.loss(b, Step{step, micro, rank});
        if (scale != 1.0) loss = loss * scale;
        loss.backward();
        lv += loss.item();
      } catch (const AnomalyError& e) {  // anomaly mode named the op; add the step
        throw AnomalyError(label + ": step " + std::to_string(step) + ": " + e.what() + nothing_lost(ctx, dir), e.op, e.pass,
                           e.shape);
      }
    }
    if (par) par->finish();  // the gradients are reduced (with ZeRO-1, each rank's own segments)
    // A NaN or infinity anywhere in a rank's gradients is one in the global sum too, so a flag summed over the ranks
    // (in the loss's all-reduce) stops every rank at the same step.
    const std::string bad_grad = first_non_finite_grad(model);
    double sums[2] = {lv, bad_grad.empty() ? 0.0 : 1.0};
    if (par) comm.allreduce_sum(sums, 2);  // the global batch's loss, and how many ranks saw a bad gradient
    lv = sums[0];
    if (!std::isfinite(lv))  // before the update, so the weights in memory and every checkpoint stay finite
      throw std::runtime_error(label + ": the loss is " + std::to_string(lv) + " at step " + std::to_string(step) +
                               " (lower the lr? --anomaly names the op)" + nothing_lost(ctx, dir));
    if (sums[1] > 0)
      throw std::runtime_error(label + ": step " + std::to_string(step) + ": the loss is finite (" + std::to_string(lv) +
                               ") but a gradient is not: " + (bad_grad.empty() ? "found on another rank" : bad_grad) +
                               " (--anomaly names the op that made it)" + nothing_lost(ctx, dir));
    const auto u0 = Clock::now();
    if (par) {
      par->clip(spec.clip);
      opt.step();
      opt.zero_grad();
      par->after_step();
    } else {
      apply_update(model, opt, spec.clip);
    }
    if (profile) {
      update_ms = std::chrono::duration<double, std::milli>(Clock::now() - u0).count();
      profile.reset();
      write_profile(ctx, spec, step, update_ms);
    }
    loss_ema = step == 0 ? lv : 0.95 * loss_ema + 0.05 * lv;
    interval_sum += lv, interval_steps++;
    r.steps_run++;
    const int done = step + 1;
    double acc = -1;
    const bool evaluate = (spec.eval_every > 0 && done % spec.eval_every == 0) || done == spec.steps;
    if (evaluate || done % log_every == 0) {  // one row: the interval's mean loss, the lr, and the evaluation if any
      CurvePoint p{spec.name, done, interval_sum / interval_steps};
      p.lr = opt.lr();
      interval_sum = 0, interval_steps = 0;
      if (evaluate) {
        EvalPoint e = parts.eval ? parts.eval() : EvalPoint{};  // every rank: apps may split the evaluation over ranks
        model.train();
        p.val_loss = e.val_loss, p.accuracy = acc = e.accuracy;
        curve.push_back(p);
      }
      if (ctx.writer()) append_metrics_csv(ctx.metrics_csv(), ctx.label, p);
    }
    bar.update(done, loss_ema, acc);
    bool saved = false;
    if ((spec.checkpoint_every > 0 && done % spec.checkpoint_every == 0) || done == spec.steps) save(done), saved = true;
    double stop = stop_requested() ? 1 : 0;
    if (par) comm.allreduce_sum(&stop, 1);  // a signal to any rank stops them all at this step
    if (done < spec.steps && stop > 0) {
      if (!saved) save(done);
      bar.finish();
      throw Interrupted(label + ": interrupted at step " + std::to_string(done) + " of " + std::to_string(spec.steps) +
                        "; a checkpoint is in " + dir + ", run again with --resume to continue");
    }
    if (ctx.stop_after >= 0 && r.steps_run >= ctx.stop_after && done < spec.steps)
      throw Interrupted(label + ": stopped after " + std::to_string(r.steps_run) + " steps (stop_after)");
  }
  bar.finish();
  r.final_loss = loss_ema;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (par) r.comm_seconds = par->comm_seconds();
  return r;
}

static void write_backbone(const nn::Module& m, const std::string& path, const std::vector<std::string>& drop,
                           const std::map<std::string, std::string>& metadata) {
  std::map<std::string, Tensor> sd;
  for (auto& [n, t] : m.state_dict()) {
    bool dropped = false;
    for (auto& d : drop) dropped |= n.starts_with(d);
    if (!dropped) sd[n] = t;
  }
  std::map<std::string, std::string> meta = metadata;
  meta.emplace("format", "pt");
  save_safetensors(path, sd, meta);
}

void save_backbone(const nn::Module& m, const std::string& path, const std::vector<std::string>& drop,
                   const std::map<std::string, std::string>& metadata, Communicator& comm) {
  if (comm.rank() == 0) write_backbone(m, path, drop, metadata);
  comm.barrier();  // the others load it next
}

nn::LoadReport load_backbone(nn::Module& m, const std::string& path, const std::vector<std::string>& allow_missing) {
  nn::LoadOptions lo;
  lo.allow_missing = allow_missing;
  return m.load(path, lo);
}

void save_cell_model(const RunContext& ctx, const nn::Module& m, const std::string& cell_key, const json& config) {
  if (!ctx.writer()) return;
  std::map<std::string, std::string> meta = {{"format", "pt"}, {"dl.cell", cell_key}, {"dl.config", config.dump()}};
  if (!ctx.app.empty()) meta["dl.app"] = ctx.app;
  m.save(ctx.dir + "/model.safetensors", meta);
}

std::string cell_model_file(const std::string& cell_or_file) {
  return std::filesystem::is_directory(cell_or_file) ? cell_or_file + "/model.safetensors" : cell_or_file;
}

}  // namespace dl::harness
