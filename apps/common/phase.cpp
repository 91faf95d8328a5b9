// apps/common/phase.cpp - the training loop (see phase.h): run_phase, its steps named and written out in
// phase_steps.cpp; chaining phases (save_backbone / load_backbone) and a finished cell's model file.
#include "apps/common/phase.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "apps/common/phase_steps.h"
#include "apps/common/progress.h"
#include "optim/checkpoint.h"
#include "optim/clip.h"
#include "tensor/safetensors.h"

namespace dl::harness {

void apply_update(nn::Module& m, optim::Optimizer& opt, double clip) {
  if (clip > 0) optim::clip_grad_norm(m.parameters(true), clip);
  opt.step();
  opt.zero_grad();
}

std::vector<CurvePoint> saved_curve(const std::string& phase_dir) {
  auto ck = optim::latest_checkpoint(phase_dir);
  if (!ck) return {};
  TensorFile f = load_safetensors(ck->state_path);
  auto it = f.metadata.find("extra.curve");
  return it == f.metadata.end() ? std::vector<CurvePoint>{} : phase_steps::curve_from_text(it->second);
}

int log_interval(const PhaseSpec& spec) { return spec.log_every > 0 ? spec.log_every : std::max(1, spec.steps / 50); }

// The loop of phase.h's header box; each concern is one call, written out in phase_steps.cpp in this order.
PhaseResult run_phase(const PhaseSpec& spec, PhaseParts& parts, const RunContext& ctx, std::vector<CurvePoint>& curve) {
  using namespace phase_steps;
  PhaseRun run(spec, parts, ctx, curve);         // the spec checked, the model on its device, the ranks joined
  resume(run);                                   // from <cell>/<phase>'s checkpoint, when ctx.resume finds one
  if (run.par) run.par->broadcast_parameters();  // every rank starts from rank 0's weights
  parts.model->train();
  Progress bar(run.label, spec.steps, run.start, run.quiet);
  const auto t0 = Clock::now();
  for (int step = run.start; step < spec.steps; step++) {
    ctx.comm->heartbeat(step);
    StepProfile profile(run, step);  // --profile: this step's ops, when it is the one
    start_step(run, step);           // the lr; data-parallel: this rank's dropout streams
    double loss = 0;
    for (int micro = 0; micro < spec.accum; micro++) {
      tasks::Batch b = draw_batch(run, step);  // the global batch, checked against the model's limits
      profile.mark();
      const double share = rank_rows(run, b);  // data-parallel: this rank's rows, n_r / B of the batch
      loss += forward_backward(run, b, Step{step, micro, run.stream_rank}, (1.0 / spec.accum) * share);
    }
    loss = global_loss(run, step, loss);  // over the ranks; NaN or Inf in it or a gradient: stop before the update
    const auto update_start = Clock::now();
    update(run);  // clip, optimizer step, zero the gradients
    profile.finish(run, step, update_start);
    record_loss(run, step, loss);
    const int done = step + 1;
    const double accuracy = log_and_evaluate(run, done);  // a metrics.csv row; eval() on the curve
    bar.update(done, run.loss_ema, accuracy);
    const bool saved = checkpoint_due(spec, done);
    if (saved) save_checkpoint(run, done);
    stop_if_asked(run, done, saved, bar);  // a signal: checkpoint and throw Interrupted
  }
  bar.finish();
  return finish(run, t0);
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
