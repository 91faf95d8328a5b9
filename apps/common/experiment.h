// apps/common/experiment.h - what an app tells the harness, and the command line every app shares.
//
// An app is a task in fairseq's sense: it owns its data, builds its model and loss, and runs one cell of its sweep
// (its phases, on the harness's run_phase). The harness knows none of that by name. It gives every app:
//   <app> run   [--preset NAME|FILE] [--<axis>s a,b ..] [--set field=value].. [--seeds 0,1,2] [--resume] ...
//   <app> cell  --<axis> value .. [--preset ..] [--set ..] [--seed k] [--resume] ...
//   <app> list
// plus the app's own subcommands. Shared options: --preset/--config, --set (repeatable), --out, --seed,
// --seeds, --threads, --jobs N (cells side by side in N processes, jobs.h), --device cpu|cuda, --precision fp32|bf16
// (tensor/bf16.h; a bf16 cell records it, and --resume refuses to continue a cell in the other precision), --comm
// auto|single|mpi|nccl (comm.h), --resume, --quiet, --zero1, --profile (one step op by op), --anomaly
// (autograd/anomaly.h: name the first op and step that produce a NaN or an infinity).
// Under mpirun every rank runs the same command and each cell trains data-parallel over the ranks (phase.h,
// docs/distributed.md); rank 0 alone writes files and logs.
// A sweep is every combination of the preset's axis values (or those picked on the command line) times every
// seed: --seeds > --seed > the preset's "seeds" > the config's own "seed". Every cell's config is resolved (and so
// validated) before the first one trains. Finished cells are skipped with --resume, a half-done one resumes from
// its checkpoints; after each cell the run's results.{json,md}, metrics.csv and the app's plots are rewritten.
// SIGINT/SIGTERM: the running phase checkpoints and the app exits with status 130 (resume with --resume).
#pragma once
#include <any>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "apps/common/config.h"
#include "apps/common/phase.h"
#include "apps/common/report.h"
#include "apps/common/results.h"

// CLI11's <CLI/CLI.hpp> is included by the .cpp files that use it (it cost every includer seconds); this declaration
// also serves the headers that build on this one (export_command.h, the apps' subcommand headers).
namespace CLI {
class App;
class Validator;
}

namespace dl::harness {

struct AxisSpec : Axis {
  std::string fallback;  // `cell` uses it when --<axis> is not given (empty: required unless the preset has one value)
  std::string help;      // for --help
};

// A cell's config as its resolve made it: the app's struct (Cell::typed, what run_cell reads) and its JSON, written
// once from the struct (Cell::config: the result, the model file's metadata, the ranks' same-config check).
struct ResolvedConfig {
  json config;
  std::any typed;
};

// An app's own subcommand: registered on the CLI, run after parsing (inside the harness's error handling).
struct Command {
  CLI::App* cmd = nullptr;
  std::function<void()> run;
};

struct Experiment {
  std::string name;         // the executable ("lra_benchmark"): default output folder runs/<name>
  std::string description;  // the --help banner
  std::string presets_dir;  // apps/<name>/presets in the source tree
  std::string default_preset = "tiny";
  // Words between the executable and the subcommand when the experiment lives inside a bigger command line (e.g.
  // {"mixers"} for `studies mixers run ...`): --jobs starts its workers with them.
  std::vector<std::string> command;
  std::vector<AxisSpec> axes;
  // The cell's config, resolved from the preset and the overrides and validated; typed_cells (typed_experiment.h) sets
  // it and run_cell for the app's config struct.
  std::function<ResolvedConfig(const Preset&, const std::vector<std::string>& values, const std::vector<std::string>& sets)>
      resolve;
  // Trains and evaluates one cell (all its phases) in ctx.dir; the harness writes its result.json.
  std::function<CellResult(const Cell&, const RunContext&)> run_cell;
  // The run's table from its finished cells (the harness writes results.md / results.json); the app may also
  // write its plots into <out>/plots.
  std::function<Table(const std::string& out, const Preset&, const std::vector<CellResult>&)> report;
  // How long a cell takes relative to the others (e.g. its training steps), so --jobs starts the long ones first;
  // may be empty (the sweep's order).
  std::function<double(const Cell&)> cost;
  std::function<void(std::ostream&)> list;                  // extra lines for `list` (may be empty)
  std::function<std::vector<Command>(CLI::App&)> commands;  // the app's own subcommands (may be empty)
};

// The app's main: parses the command line and runs what it asks for. Returns the exit status.
int run_main(const Experiment& e, int argc, char** argv);

// ---- the pieces run_main is made of (tests and apps with their own mains use them) ----
struct SweepOptions {
  std::string out;
  std::string device = "cpu";
  bool resume = false, quiet = false;
  int stop_after = -1;                     // tests
  Communicator* comm = &single_process();  // data-parallel ranks (under mpirun: communicator())
  bool zero1 = false;
  bool profile = false;  // --profile: one step of each phase op by op (phase.h)
  int worker = -1;       // >= 0: --jobs worker k (jobs.h): runs the cells it claims, writes no reports, takes no lock
};
// Every combination of `values` (one list per axis, in axis order) times `seeds`, each resolved by e.resolve.
std::vector<Cell> expand_cells(const Experiment& e, const Preset& p, const std::vector<std::vector<std::string>>& values,
                               const std::vector<int>& seeds, const std::vector<std::string>& sets);
// Runs the cells (skipping finished ones when resuming) and rewrites the reports after each. Returns the results of
// the cells this call ran or skipped (a worker: those it claimed or skipped).
std::vector<CellResult> run_cells(const Experiment& e, const Preset& p, const std::vector<Cell>& cells, const SweepOptions& o);
// results.json, results.md, metrics.csv (and the app's plots) from every finished cell under out; returns the table.
Table write_reports(const Experiment& e, const Preset& p, const std::string& out);
// "0,1,2" or "0-4" (inclusive) -> seeds; a ConfigError names anything else.
std::vector<int> parse_seeds(const std::string& text);
// The CPU threads of this process's parallel loops (OpenMP's team size), the one place an app sets them (--threads).
// OpenBLAS is left as it is: tensor/linalg.cpp keeps it at one thread and splits products over OpenMP's threads.
// n < 1 is a ConfigError.
void set_threads(int n);
// "unknown command 'nosuch' (known: run, cell, list, export)" when argv[1] is a word that names none of app's
// subcommands, else "" (CLI11 says only "A subcommand is required"). run_main and `studies` check it before parsing.
std::string unknown_command(CLI::App& app, int argc, char** argv);
// The run folder --out names, created with its parents; one that cannot be is a ConfigError naming it and the reason
// ("--out /proc/x: cannot create the folder (No such file or directory)"), not std::filesystem's message.
void make_run_folder(const std::string& out);
// A command-line check that says what it wants: `->check(harness::at_least(1))` fails "--threads 0" with
// "--threads: expected a number >= 1, found 0" (CLI11's PositiveNumber said "Value 0 not in range 0.000000 to
// 179769313486231570814527...", one line of 300 digits).
CLI::Validator at_least(double lo);
// The same for an interval, open at lo or not: number_in(0, 1, true) fails "--top-p 0" with "expected a number in
// (0, 1], found 0".
CLI::Validator number_in(double lo, double hi, bool lo_open = false);
// --device checked before any cell runs: "cpu", or "cuda" when the build has the backend and a device is present
// (apps/common/device.h says what runs where; docs/cuda.md which ops have device kernels).
void check_device(const std::string& device);

}  // namespace dl::harness
