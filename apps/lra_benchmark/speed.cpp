// apps/lra_benchmark/speed.cpp - steps/s of each cell's model (see speed.h).
#include "speed.h"

#include <CLI/CLI.hpp>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>

#include "apps/common/device.h"
#include "apps/common/experiment.h"
#include "apps/common/phase.h"
#include "cell.h"
#include "data.h"
#include "optim/adam.h"

namespace lra {

using namespace dl;
using Clock = std::chrono::steady_clock;

// The preset's own sizes: ListOps' longest example depends on them.
TaskShape task_shape(const CellConfig& c) { return shape_of(task_data(c)); }

// One batch of random inputs, every position real: tokens in [0, vocab), or features with a zero mask channel.
static Inputs random_inputs(const TaskShape& s, int64_t B, int64_t L, Generator& g) {
  Inputs in;
  in.mask = ones({B, L});
  if (s.vocab > 0) {
    in.tokens = randint(0, s.vocab, {B, L}, g);
  } else {
    in.features = zeros({B, L, s.features + 1});
    in.features.narrow(2, 0, s.features).copy_(randn({B, L, s.features}, g));
  }
  return in;
}

static Inputs on_device(const Inputs& in, Device d) {
  auto to = [d](const Tensor& t) { return t.defined() ? t.to(d) : t; };
  return {to(in.tokens), to(in.features), to(in.mask)};
}

static double peak_rss_mb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;  // Linux reports kilobytes
}

SpeedResult measure_speed(const CellConfig& c, const SpeedOptions& o) {
  harness::set_threads(o.threads);
  const Device dev = harness::parse_device(o.device);
  Backend* device = dev == Device::cpu ? nullptr : &require_backend(dev, "lra_benchmark speed");
  SpeedResult r;
  r.device = o.device;
  r.task = c.task, r.model = c.model, r.batch = c.batch;
  r.shape = task_shape(c);
  r.seq_len = r.shape.max_len;  // a batch of the longest sequences: the most a training step of this cell costs

  Generator g((uint64_t)c.seed + 1);  // the fine-tuning model's seed, as run_cell
  LraModel m(c, r.shape, c.regime == "spt-causal", g);
  r.params = m.num_parameters() - m.pretrain_head_params();
  harness::place_model(m, dev);
  optim::AdamW opt = make_optimizer(m, c, c.lr);  // the fine-tuning phase's
  m.train();

  Inputs a = random_inputs(r.shape, c.batch, r.seq_len, g), b;
  if (r.shape.two_tower) b = random_inputs(r.shape, c.batch, r.seq_len, g);
  Tensor labels = randint(0, r.shape.classes, {c.batch}, g);
  a = on_device(a, dev), b = on_device(b, dev), labels = labels.to(dev);

  std::vector<double> ms;
  for (int step = 0; step < o.warmup + o.steps; step++) {
    auto t0 = Clock::now();
    Var loss = cross_entropy(m.classify(a, r.shape.two_tower ? &b : nullptr), labels);
    loss.backward();
    loss.item();  // the trainer reads the loss every step
    dl::harness::apply_update(m, opt, c.clip);
    if (device) device->synchronize();  // the device's work, not its queueing
    if (step >= o.warmup) ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  r.ms_per_step = ms.empty() ? 0 : ms[ms.size() / 2];  // the median (the upper one of an even count)
  r.steps_per_s = r.ms_per_step > 0 ? 1000.0 / r.ms_per_step : 0;
  r.model_gflop = nn::train_step_flops(m.forward_flops(c.batch, r.seq_len)) / 1e9;
  r.gflops = r.model_gflop * r.steps_per_s;
  r.peak_rss_mb = peak_rss_mb();
  return r;
}

json SpeedResult::to_json(const std::string& preset) const {
  auto round2 = [](double x) { return std::round(x * 100) / 100; };
  json s = {{"vocab", shape.vocab},
            {"features", shape.features},
            {"classes", shape.classes},
            {"max_len", shape.max_len},
            {"two_tower", shape.two_tower}};
  return {{"preset", preset},
          {"task", task},
          {"model", model},
          {"params", params},
          {"batch", batch},
          {"seq_len", seq_len},
          {"ms_per_step", round2(ms_per_step)},
          {"steps_per_s", round2(steps_per_s)},
          {"model_gflop", model_gflop},
          {"gflops", round2(gflops)},
          {"peak_rss_mb", round2(peak_rss_mb)},
          {"device", device},
          {"shape", s}};
}

// ---------------------------------------------------------------------------------------------
SpeedCommand::SpeedCommand(CLI::App& app) {
  cmd_ =
      app.add_subcommand("speed", "training steps/s of each task x model of a preset (scratch fine-tuning), one JSON line each");
  cmd_->add_option("--preset,--config", preset_, "preset name (apps/lra_benchmark/presets) or a JSON file")
      ->capture_default_str();
  cmd_->add_option("--tasks", tasks_, "only these tasks")->delimiter(',');
  cmd_->add_option("--models", models_, "only these models")->delimiter(',');
  cmd_->add_option("--set", sets_, "override a field: --set batch=8 (repeatable)");
  cmd_->add_option("--steps", opt_.steps, "timed steps")->capture_default_str()->check(harness::at_least(1));
  cmd_->add_option("--warmup", opt_.warmup, "untimed steps first")->capture_default_str()->check(harness::at_least(0));
  cmd_->add_option("--threads", opt_.threads, "CPU threads")->capture_default_str()->check(harness::at_least(1));
  cmd_->add_option("--device", opt_.device, "cpu or cuda")->capture_default_str();
}

void SpeedCommand::run() const {
  dl::harness::Preset p = load_preset(preset_);
  for (auto& t : tasks_.empty() ? p.values[0] : tasks_)
    for (auto& m : models_.empty() ? p.values[1] : models_)
      std::cout << measure_speed(resolve_cell(p, t, m, "scratch", sets_), opt_).to_json(p.name).dump() << std::endl;
}

}  // namespace lra
