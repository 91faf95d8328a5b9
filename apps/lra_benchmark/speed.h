// apps/lra_benchmark/speed.h - training steps per second of each cell's model, beside bench/torch_lra.py.
//
//   lra_benchmark speed [--preset tiny|small|FILE] [--tasks ..] [--models ..] [--set k=v].. [--steps 5] [--warmup 2]
//                       [--threads 2] [--device cpu|cuda]
//
// For every task x model of the preset (the scratch regime's fine-tuning configuration) it builds the LraModel the
// cell builds, feeds random inputs of the cell's batch size at the task's longest sequence (both towers for
// retrieval; every position real, so the mask is all ones), and times full training steps as the harness's
// run_phase takes them: forward, cross-entropy, backward, then apply_update (gradient clipping, AdamW with the
// cell's parameter groups, zeroed gradients). After `warmup` untimed steps it prints one JSON line per cell:
//   {"preset", "task", "model", "params", "batch", "seq_len", "ms_per_step" (median), "steps_per_s",
//    "model_gflop" (a training step's FLOPs, the model's own count: 3 x LraModel::forward_flops), "gflops" (model_gflop
//    per second of the median step), "peak_rss_mb" (of the whole process so far: run one cell per process to compare
//    cells), "shape"}
// "shape" is the TaskShape (vocab, features, classes, max_len, two_tower) that bench/torch_lra.py takes as --shape,
// since the PyTorch twin cannot read our datasets. The task's data is made as the trainer makes it (the preset's
// sizes), since the shape depends on it (ListOps' longest example).
// --device cuda: the model and the batch on the GPU (apps/common/device.h), each step ending with the device's
// synchronize(), and "device" in the line (scripts/gpu_check.sh times the paper preset's ListOps Transformer so).
#pragma once
#include <string>
#include <vector>

#include "config.h"
#include "model.h"
#include <nlohmann/json.hpp>

namespace CLI {  // CLI11's <CLI/CLI.hpp> is included by the .cpp files that use it: it cost every includer seconds
class App;
}

namespace lra {

struct SpeedOptions {
  int steps = 5;    // timed steps
  int warmup = 2;   // untimed steps first (allocator and FFT plans warm up)
  int threads = 2;  // OpenMP threads
  std::string device = "cpu";
};

struct SpeedResult {
  std::string task, model;
  TaskShape shape;
  int64_t params = 0;  // the fine-tuned model's (the pretraining head left out, as CellResult::params)
  int batch = 0, seq_len = 0;
  double ms_per_step = 0, steps_per_s = 0, peak_rss_mb = 0;
  std::string device = "cpu";
  double model_gflop = 0, gflops = 0;  // per training step (nn/sequence_layer.h's convention), and per second
  json to_json(const std::string& preset) const;
};

// The task's shape as the cell computes it (data.h's shape_of).
TaskShape task_shape(const CellConfig& c);

// Time `o.steps` training steps of the cell's model after `o.warmup` untimed ones.
SpeedResult measure_speed(const CellConfig& c, const SpeedOptions& o);

// The `speed` subcommand: registers its options on `app`; main() runs it when it was chosen.
class SpeedCommand {
 public:
  explicit SpeedCommand(CLI::App& app);
  SpeedCommand(const SpeedCommand&) = delete;  // CLI11 holds pointers to the members
  CLI::App* command() const { return cmd_; }
  void run() const;  // prints one JSON line per cell; errors are exceptions

 private:
  CLI::App* cmd_;
  std::string preset_ = "tiny";
  std::vector<std::string> tasks_, models_, sets_;
  SpeedOptions opt_;
};

}  // namespace lra
