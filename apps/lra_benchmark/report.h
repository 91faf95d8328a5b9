// apps/lra_benchmark/report.h - what a user sees: progress bar, per-cell results, the final table and plots.
//
// Output folder layout (all writes atomic: temp file + rename):
//   <out>/results.json            every finished cell (config, accuracies, timings, learning curves)
//   <out>/results.md              the table: task x model x regime, val/test accuracy, SPT gain, params, time
//   <out>/metrics.csv             one row per evaluation of every cell (cell, phase, step, loss, accuracy, lr)
//   <out>/plots/<task>.png        learning curves, scratch vs. SPT (when gnuplot is installed)
//   <out>/cells/<task>__<model>__<regime>/{result.json, model.safetensors, state.safetensors, metrics.csv}
//   <out>/cells/<...>/kernels.{dat,png}  the learned SSM kernels of the first block (S4, S4D, DLR; png with gnuplot)
//   <out>/cells/<...>/kernels_max.dat    their max over channels per lag: at init, after pretraining, after fine-tuning
#pragma once
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lra {

using json = nlohmann::json;

struct CurvePoint {
  std::string phase;  // "pretrain" or "finetune"
  int step = 0;
  double loss = 0, accuracy = -1, lr = 0;  // accuracy -1: not evaluated at this point
};

struct CellResult {
  std::string task, model, regime;
  double val_acc = 0, test_acc = 0, best_val_acc = 0;
  double pretrain_final_loss = -1;
  int64_t params = 0;
  double wall_s = 0, steps_per_s = 0;
  int steps = 0, pretrain_steps = 0;
  std::vector<CurvePoint> curve;
  json config;
  json to_json() const;
  static CellResult from_json(const json& j);
};

// A one-line progress bar on stderr: redrawn in place on a terminal, a plain line every `every` steps otherwise.
class Progress {
 public:
  Progress(std::string label, int total, int start = 0, bool quiet = false);
  void update(int step, double loss, double acc = -1);
  void finish();

 private:
  std::string label_;
  int total_, start_;
  bool tty_, quiet_;
  std::chrono::steady_clock::time_point t0_, last_print_;
};

std::string cell_dir(const std::string& out, const std::string& task, const std::string& model, const std::string& regime);
void write_text_atomic(const std::string& path, const std::string& text);
void append_metrics_csv(const std::string& path, const std::string& cell, const CurvePoint& p);

// results.json + results.md (+ plots) for all cells found under <out>/cells.
std::vector<CellResult> collect_results(const std::string& out);
std::string results_table_md(const std::vector<CellResult>& rs, const std::string& title);
void write_reports(const std::string& out, const std::string& title);
bool have_gnuplot();
// Runs a gnuplot script whose terminal is pngcairo, falling back to png where gnuplot lacks cairo.
void run_gnuplot(const std::string& script);

}  // namespace lra
