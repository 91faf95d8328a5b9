// apps/common/phase.cpp - the training loop (see phase.h).
#include "apps/common/phase.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "apps/common/progress.h"
#include "apps/common/signals.h"
#include "optim/checkpoint.h"
#include "optim/clip.h"
#include "tensor/safetensors.h"

namespace dl::harness {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

void apply_update(nn::Module& m, optim::Optimizer& opt, double clip) {
  if (clip > 0) optim::clip_grad_norm(m.parameters(true), clip);
  opt.step();
  opt.zero_grad();
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

PhaseResult run_phase(const PhaseSpec& spec, PhaseParts& parts, const RunContext& ctx, std::vector<CurvePoint>& curve) {
  nn::Module& model = *parts.model;
  optim::Optimizer& opt = *parts.opt;
  tasks::Batcher& batches = *parts.batches;
  const std::string dir = ctx.dir + "/" + spec.name, label = ctx.label + " " + spec.name;
  if (spec.accum < 1) throw std::invalid_argument(label + ": accum must be >= 1, found " + std::to_string(spec.accum));

  int start = 0;
  double loss_ema = 0;  // the smoothed training loss shown and logged; part of the saved state
  if (ctx.resume && optim::latest_checkpoint(dir)) {
    optim::TrainingState st = optim::load_checkpoint(dir, model, opt);
    start = (int)st.step;
    batches.set_position(tasks::DataPosition::from_string(st.data_position));
    for (auto& [name, g] : parts.rngs) st.restore_rng(name, *g);
    curve = curve_from_text(st.extra.at("curve"));
    loss_ema = std::stod(st.extra.at("loss_ema"));
    truncate_metrics_csv(ctx.metrics_csv(), spec.name, start);  // rows logged after the checkpoint come again
    if (!ctx.quiet && start < spec.steps) std::cerr << label << ": resumed from step " << start << " (" << dir << ")\n";
  }
  auto save = [&](int step) {
    optim::TrainingState st;
    st.step = step;
    st.data_position = batches.position().to_string();
    for (auto& [name, g] : parts.rngs) st.save_rng(name, *g);
    st.extra["curve"] = curve_to_text(curve);
    st.extra["loss_ema"] = exact(loss_ema);
    optim::save_checkpoint(dir, model, opt, st);
  };

  model.train();
  Progress bar(label, spec.steps, start, ctx.quiet);
  PhaseResult r;
  r.start = start;
  auto t0 = Clock::now();
  for (int step = start; step < spec.steps; step++) {
    optim::apply_schedule(opt, parts.schedule, step);
    double lv = 0;
    for (int micro = 0; micro < spec.accum; micro++) {
      Var loss = parts.loss(batches.next(), Step{step, micro});
      if (spec.accum > 1) loss = loss * (1.0 / spec.accum);
      loss.backward();
      lv += loss.item();
    }
    apply_update(model, opt, spec.clip);
    if (!std::isfinite(lv))
      throw std::runtime_error(label + ": loss is " + std::to_string(lv) + " at step " + std::to_string(step) +
                               " (lower the lr?)");
    loss_ema = step == 0 ? lv : 0.95 * loss_ema + 0.05 * lv;
    r.steps_run++;
    const int done = step + 1;
    double acc = -1;
    if ((spec.eval_every > 0 && done % spec.eval_every == 0) || done == spec.steps) {
      EvalPoint e = parts.eval ? parts.eval() : EvalPoint{};
      model.train();
      CurvePoint p{spec.name, done, loss_ema, e.val_loss, acc = e.accuracy, opt.lr()};
      curve.push_back(p);
      append_metrics_csv(ctx.metrics_csv(), ctx.label, p);
    }
    bar.update(done, loss_ema, acc);
    bool saved = false;
    if ((spec.checkpoint_every > 0 && done % spec.checkpoint_every == 0) || done == spec.steps) save(done), saved = true;
    if (done < spec.steps && stop_requested()) {
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
  return r;
}

void save_backbone(const nn::Module& m, const std::string& path, const std::vector<std::string>& drop,
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

nn::LoadReport load_backbone(nn::Module& m, const std::string& path, const std::vector<std::string>& allow_missing) {
  nn::LoadOptions lo;
  lo.allow_missing = allow_missing;
  return m.load(path, lo);
}

}  // namespace dl::harness
