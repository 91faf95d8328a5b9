// apps/common/results.h - what a run leaves on disk, and the records it is made of.
//
// Run folder (every write atomic: temp file + rename):
//   <out>/results.json                 the run: title, every finished cell's result, the app's table
//   <out>/results.md                   the app's table (mean +- standard error over seeds) and its notes
//   <out>/metrics.csv                  every cell's log under one header: cell,phase,step,train_loss,val_loss,accuracy,lr
//   <out>/plots/                       the app's plots (gnuplot; PNG)
//   <out>/cells/<cell>/                one cell: result.json (written last), metrics.csv, <phase>/ checkpoints, ...
// A cell is one value of each of the app's axes and a seed; its folder is "<v1>__<v2>__...__seed<k>".
#pragma once
#include <any>
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dl::harness {

using json = nlohmann::json;

struct Cell {
  std::vector<std::string> axes;    // the app's axis names, e.g. task, model, regime
  std::vector<std::string> values;  // one value per axis
  int seed = 0;
  json config;       // the resolved config (stored in the result)
  std::any typed{};  // the same as the app's config struct (typed_experiment.h); empty in a cell read from a result

  std::string name() const;                                 // listops__s4d__scratch__seed0 (the folder)
  std::string key() const;                                  // listops/s4d/scratch (the seeds of one key are averaged)
  std::string label() const;                                // listops/s4d/scratch seed 0 (logs)
  const std::string& value(const std::string& axis) const;  // throws naming an axis the app does not have
};

// One row of a phase's log (metrics.csv; the evaluation rows are also the result's curve). train_loss is the mean
// training loss of the steps since the phase's previous row, lr the learning rate of the row's step. val_loss is
// NaN and accuracy -1 where the row has no evaluation or the phase does not measure them.
struct CurvePoint {
  std::string phase;
  int step = 0;
  double train_loss = 0, val_loss = std::numeric_limits<double>::quiet_NaN(), accuracy = -1, lr = 0;
  json to_json() const;
  static CurvePoint from_json(const json& j);
};

struct CellResult {
  Cell cell;
  std::map<std::string, double> metrics;  // e.g. val_acc, test_acc, best_val_acc, pretrain_final_loss
  int64_t test_examples = 0;              // the test split's size (the binomial standard error of one seed)
  int64_t params = 0;
  double wall_s = 0, steps_per_s = 0;
  std::vector<CurvePoint> curve;
  json extra = json::object();  // anything else the app records

  double metric(const std::string& name) const;  // throws naming a metric the result lacks
  json to_json() const;
  static CellResult from_json(const json& j);
};

void write_text_atomic(const std::string& path, const std::string& text);  // creates the parent folders
std::string read_text(const std::string& path);                            // throws naming an unreadable file
// <dir>/info.json of a pretrained-model cache (fpt, pretrained_convs, nsp-bert write it last, atomically); a damaged
// one is a ConfigError naming it and saying to delete the folder.
json read_cache_info(const std::string& dir);

std::string cell_dir(const std::string& out, const Cell& c);  // <out>/cells/<c.name()>
std::string result_path(const std::string& out, const Cell& c);
void write_result(const std::string& out, const CellResult& r);
// A finished cell's result.json; throws ConfigError naming the file when it is damaged (delete it to run the cell
// again), and read_text's error when it is missing.
CellResult read_result(const std::string& out, const Cell& c);
// Every cells/*/result.json under out, sorted by cell name; an unreadable one is skipped with a warning.
std::vector<CellResult> collect_results(const std::string& out);

// <out>/.lock while a run writes there: it holds the writer's pid, and a second run refuses the folder while that
// process lives (a stale lock, from a process that died, is taken over). Released by the destructor.
class RunLock {
 public:
  explicit RunLock(const std::string& out);  // throws std::runtime_error naming the folder and the pid that holds it
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  std::string path_;
  bool owned_ = false;
};

// ---- metrics.csv ----
// <cell>/metrics.csv: a header, then one row per logged step of every phase, in order (phase.h: every log_every steps
// and at every evaluation). A row is appended with one write, so a kill leaves at most a torn last line.
void append_metrics_csv(const std::string& path, const std::string& cell, const CurvePoint& p);
// Drop the rows of `phase` after `step` (they were logged after the checkpoint a resumed run restarts from) and any
// torn line (fewer fields than the header's), rewriting the file atomically.
void truncate_metrics_csv(const std::string& path, const std::string& phase, int step);
// The rows of one cell's metrics.csv (empty when the file is missing); a line that is not a full row is skipped.
std::vector<CurvePoint> read_metrics_csv(const std::string& path);
// <out>/metrics.csv: the cells' logs concatenated under one header.
void write_run_metrics(const std::string& out, const std::vector<CellResult>& rs);

}  // namespace dl::harness
