// apps/common/experiment.cpp - the shared command line and the sweep (see experiment.h).
#include "apps/common/experiment.h"

#include <CLI/CLI.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "apps/common/device.h"
#include "apps/common/html_report.h"
#include "apps/common/jobs.h"
#include "apps/common/progress.h"
#include "apps/common/signals.h"
#include "autograd/anomaly.h"
#include "tensor/bf16.h"

namespace dl::harness {

namespace fs = std::filesystem;

void set_threads(int n) {
  if (n < 1) throw ConfigError("--threads " + std::to_string(n) + ": the number of CPU threads must be at least 1");
  omp_set_num_threads(n);
}

std::vector<int> parse_seeds(const std::string& text) {
  std::vector<int> seeds;
  auto bad = [&]() { return ConfigError("--seeds '" + text + "': expected a list like 0,1,2 or a range like 0-4"); };
  size_t a = 0;
  while (a <= text.size()) {
    size_t b = text.find(',', a);
    std::string part = text.substr(a, b == std::string::npos ? std::string::npos : b - a);
    size_t dash = part.find('-');
    try {
      size_t used = 0;
      if (dash == std::string::npos) {
        int s = std::stoi(part, &used);
        if (used != part.size() || s < 0) throw bad();
        seeds.push_back(s);
      } else {
        size_t used_hi = 0;
        const std::string tail = part.substr(dash + 1);
        int lo = std::stoi(part.substr(0, dash), &used), hi = std::stoi(tail, &used_hi);
        if (used != dash || used_hi != tail.size() || lo < 0 || hi < lo) throw bad();
        if (hi - lo >= 100000)
          throw ConfigError("--seeds '" + text + "': " + part + " is " + std::to_string((int64_t)hi - lo + 1) +
                            " seeds (at most 100000)");
        for (int s = lo; s <= hi; s++) seeds.push_back(s);
      }
    } catch (const std::logic_error&) {  // stoi: not a number
      throw bad();
    }
    if (b == std::string::npos) break;
    a = b + 1;
  }
  if (seeds.empty()) throw bad();
  std::vector<int> sorted = seeds;  // a seed twice would be one cell run twice into the same folder
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < sorted.size(); i++)
    if (sorted[i] == sorted[i - 1])
      throw ConfigError("--seeds '" + text + "': seed " + std::to_string(sorted[i]) + " is given twice");
  return seeds;
}

void check_device(const std::string& device) { parse_device(device); }

std::string unknown_command(CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return "";
  std::vector<std::string> names;
  for (const CLI::App* c : app.get_subcommands([](CLI::App*) { return true; })) {
    if (c->get_name() == argv[1]) return "";
    names.push_back(c->get_name());
  }
  return "unknown command '" + std::string(argv[1]) + "' (known: " + join(names) + ")";
}

void make_run_folder(const std::string& out) {
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw ConfigError("--out " + out + ": cannot create the folder (" + ec.message() + ")");
}

namespace {
// A validator from a test of the value and the words for what it wants ("a number >= 1").
CLI::Validator number_check(std::function<bool(double)> ok, const std::string& wanted, const std::string& short_name) {
  return CLI::Validator(
      [ok, wanted](std::string& s) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(s, v)) return "expected a number, found '" + s + "'";
        return ok(v) ? std::string() : "expected " + wanted + ", found " + s;
      },
      short_name);
}
}  // namespace

CLI::Validator at_least(double lo) {
  return number_check([lo](double v) { return v >= lo; }, "a number >= " + number_text(lo), ">=" + number_text(lo));
}

CLI::Validator number_in(double lo, double hi, bool lo_open) {
  const std::string range = (lo_open ? "(" : "[") + number_text(lo) + ", " + number_text(hi) + "]";
  return number_check([=](double v) { return (lo_open ? v > lo : v >= lo) && v <= hi; }, "a number in " + range, range);
}

namespace {

// --precision of a cell that ran before (its result's "precision", else the marker in its folder; neither: fp32) must
// be this run's: a resumed cell does not change arithmetic halfway, and a table does not mix the two unseen.
void check_cell_precision(const std::string& found, const std::string& label, const std::string& where) {
  const std::string now = precision_name(matmul_precision());
  if (found != now)
    throw ConfigError(label + " ran with --precision " + found + " (" + where + "), this run asks for --precision " + now +
                      ": resume with --precision " + found + " or write to another --out");
}

// A cell that ran before (its result.json, or the config.json its folder keeps from the start) must have run with
// this run's settings: --resume after `--set steps=3` skipped a cell finished with steps 2 and its numbers went into
// the new table as if they were the new run's. Fields only one side has (a config field added since) are not
// compared.
void check_cell_config(const json& before, const json& now, const std::string& label, const std::string& where) {
  if (!before.is_object()) return;  // nothing readable to compare
  std::vector<std::string> diffs;
  for (auto& [k, v] : now.items())
    if (before.contains(k) && before[k] != v) diffs.push_back(k + " " + before[k].dump() + " -> " + v.dump());
  if (!diffs.empty())
    throw ConfigError(label + " ran with other settings (" + where + "): " + join(diffs, ", ") +
                      "; resume with the settings it ran with, or run without --resume (it starts again) or into another --out");
}

// What a cell folder keeps from its start: the precision marker (bf16 cells only; absent: fp32) and the settings.
std::string precision_marker(const std::string& dir) { return dir + "/precision"; }
std::string start_config(const std::string& dir) { return dir + "/config.json"; }

// What a resume finds of cell c (finished: its result.json; half-done: its folder's precision marker and config.json)
// must have this run's settings and precision. run_cells checks every cell before it runs any.
void check_resumable(const std::string& out, const Cell& c) {
  const std::string label = "[" + c.label() + "]", dir = cell_dir(out, c), result = result_path(out, c);
  if (fs::exists(result)) {
    const CellResult before = read_result(out, c);
    check_cell_config(before.cell.config, c.config, label, result);
    check_cell_precision(before.extra.value("precision", "fp32"), label, result);
  } else if (fs::is_directory(dir) && !fs::is_empty(dir)) {
    const std::string marker = precision_marker(dir), config = start_config(dir);
    check_cell_precision(fs::exists(marker) ? read_text(marker) : "fp32", label, dir);
    if (fs::exists(config))  // written atomically; unreadable (edited by hand) is nothing to compare
      check_cell_config(json::parse(read_text(config), nullptr, false), c.config, label, config);
  }
}

}  // namespace

std::vector<Cell> expand_cells(const Experiment& e, const Preset& p, const std::vector<std::vector<std::string>>& values,
                               const std::vector<int>& seeds, const std::vector<std::string>& sets) {
  std::vector<std::string> axes;
  for (auto& a : e.axes) axes.push_back(a.name);
  std::vector<Cell> cells;
  for (const std::vector<std::string>& v : combinations(values)) {
    if (seeds.empty()) {  // the config's own seed
      ResolvedConfig r = e.resolve(p, v, sets);
      if (!r.config.contains("seed") || !r.config["seed"].is_number_integer())
        throw std::logic_error(e.name + ": the config has no integer field 'seed'");
      cells.push_back(Cell{axes, v, r.config["seed"].get<int>(), r.config, r.typed});
      continue;
    }
    for (int s : seeds) {
      std::vector<std::string> with_seed = sets;
      with_seed.push_back("seed=" + std::to_string(s));
      ResolvedConfig r = e.resolve(p, v, with_seed);
      cells.push_back(Cell{axes, v, s, r.config, r.typed});
    }
  }
  return cells;
}

Table write_reports(const Experiment& e, const Preset& p, const std::string& out) {
  std::vector<CellResult> rs = collect_results(out);
  Table t = e.report(out, p, rs);
  json cells = json::array();
  for (auto& r : rs) cells.push_back(r.to_json());
  write_text_atomic(out + "/results.json",
                    json{{"app", e.name}, {"preset", p.name}, {"table", t.to_json()}, {"cells", cells}}.dump(2) + "\n");
  write_text_atomic(out + "/results.md", t.markdown());
  write_run_metrics(out, rs);
  write_html_report(out, e.name, p.name, t, rs);  // last: it shows the plots e.report drew
  return t;
}

std::vector<CellResult> run_cells(const Experiment& e, const Preset& p, const std::vector<Cell>& cells, const SweepOptions& o) {
  Communicator& comm = *o.comm;
  const bool writer = comm.rank() == 0;
  std::vector<CellResult> done;
  if (writer) make_run_folder(o.out);
  std::unique_ptr<RunLock> lock;  // one writer per run folder; every rank learns whether rank 0 got it
  std::string lock_error;
  if (writer && o.worker < 0) try {  // a --jobs worker writes under its parent's lock
      lock = std::make_unique<RunLock>(o.out);
    } catch (const std::exception& ex) {
      lock_error = ex.what();
    }
  double refused = lock_error.empty() ? 0 : 1;
  comm.allreduce_sum(&refused, 1);
  if (refused > 0) throw std::runtime_error(writer ? lock_error : o.out + " is in use by another run (see rank 0)");
  // DL_BUCKET_BYTES: the data-parallel gradient buckets' size (default 25 MiB, PyTorch DDP's). Smaller buckets start
  // their all-reduce earlier in the backward (more overlap, more collectives): bench/run_dist.sh measures both.
  int64_t bucket_bytes = DataParallelOptions{}.bucket_bytes;
  if (const char* b = std::getenv("DL_BUCKET_BYTES")) {
    char* end = nullptr;
    bucket_bytes = std::strtoll(b, &end, 10);
    if (end == b || *end || bucket_bytes < 4)
      throw ConfigError(std::string("DL_BUCKET_BYTES='") + b + "': expected a number of bytes >= 4");
  }
  if (o.resume)
    for (const Cell& c : cells) check_resumable(o.out, c);
  for (auto& c : cells) {
    check_same_on_every_rank(comm, c.config.dump(), "the config of cell " + c.label());
    RunContext ctx;
    ctx.out = o.out, ctx.dir = cell_dir(o.out, c), ctx.label = "[" + c.label() + "]";
    ctx.device = o.device, ctx.resume = o.resume, ctx.quiet = o.quiet || !writer, ctx.stop_after = o.stop_after;
    ctx.comm = &comm, ctx.parallel.zero1 = o.zero1, ctx.parallel.bucket_bytes = bucket_bytes, ctx.profile = o.profile,
    ctx.app = e.name;
    if (o.resume && fs::exists(result_path(o.out, c))) {
      if (!ctx.quiet) std::cerr << ctx.label << " finished earlier, skipped (--resume)\n";
      done.push_back(read_result(o.out, c));
      continue;
    }
    if (o.worker >= 0) {
      if (!claim_cell(o.out, c, o.worker)) continue;                                  // another worker runs it
      if (!ctx.quiet) std::cerr << ctx.label << " runs in job " << o.worker << "\n";  // the worker's log
      progress_note(ctx.label + " starting");
    }
    if (writer) {
      if (!o.resume) fs::remove_all(ctx.dir);  // a fresh run of this cell forgets earlier checkpoints and logs
      fs::create_directories(ctx.dir);
      if (matmul_precision() != Precision::fp32) write_text_atomic(precision_marker(ctx.dir), precision_name(matmul_precision()));
      if (!fs::exists(start_config(ctx.dir))) write_text_atomic(start_config(ctx.dir), c.config.dump(2) + "\n");
    }
    comm.barrier();  // the folder is there (and empty) before any rank looks into it
    auto t0 = std::chrono::steady_clock::now();
    CellResult r = e.run_cell(c, ctx);
    r.cell = c;
    if (writer) r.extra["commit"] = source_commit();  // the commit the cell ran at, for report.html (one git call)
    if (r.wall_s == 0) r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (comm.size() > 1) r.extra["ranks"] = comm.size();
    if (matmul_precision() != Precision::fp32) r.extra["precision"] = precision_name(matmul_precision());
    if (writer) {
      write_result(o.out, r);
      if (o.worker >= 0) mark_cell_done(o.out, c);  // the parent rewrites the reports
      else write_reports(e, p, o.out);
    }
    done.push_back(r);
  }
  return done;
}

// ---- the command line ----
namespace {

struct Shared {
  std::string preset, out, device = "cpu", seeds, comm = "auto", precision = "fp32";
  std::vector<std::string> sets;
  int seed = -1, threads = 2, jobs = 1, worker = -1;
  bool resume = false, quiet = false, zero1 = false, anomaly = false, profile = false;
};

void add_shared(CLI::App* s, Shared& o) {
  s->add_option("--preset,--config", o.preset, "preset name (in the app's presets folder) or a JSON file")->capture_default_str();
  s->add_option("--set", o.sets, "override a config field: --set lr=3e-4 (repeatable)");
  s->add_option("--out", o.out, "output folder")->capture_default_str();
  s->add_option("--seed", o.seed, "one seed (overrides the preset's seeds)");
  s->add_option("--seeds", o.seeds, "several seeds: 0,1,2 or 0-4; tables show mean and standard error");
  s->add_option("--threads", o.threads, "CPU threads (per job; with --jobs > 1 the default is 1)")
      ->capture_default_str()
      ->check(at_least(1));
  s->add_option("--jobs", o.jobs,
                "run this many cells at once, each in its own process (CPU; same results as one after another with "
                "the same --threads)")
      ->capture_default_str()
      ->check(at_least(1));
  s->add_option("--worker", o.worker, "internal: worker k of --jobs")->group("");
  s->add_option("--device", o.device, "cpu or cuda")->capture_default_str();
  s->add_option("--precision", o.precision,
                "fp32, or bf16: matrix products in bfloat16 with float32 sums where the CPU (AVX512_BF16) or GPU has "
                "them; everything else stays float32 (tensor/bf16.h)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "bf16"}));
  s->add_option("--comm", o.comm,
                "data-parallel communicator: auto (under mpirun: nccl for --device cuda when built with NCCL, else mpi), "
                "single, mpi or nccl")
      ->capture_default_str();
  s->add_flag("--resume", o.resume, "continue: skip finished cells, resume half-done ones from their checkpoints");
  s->add_flag("--quiet", o.quiet, "no progress bars or log lines");
  s->add_flag("--zero1", o.zero1, "under mpirun: shard the optimizer state over the ranks (ZeRO stage 1)");
  s->add_flag("--profile", o.profile,
              "time one training step of each phase op by op (forward, backward): <cell>/profile_<phase>.md and stderr");
  s->add_flag("--anomaly", o.anomaly,
              "anomaly mode: check every op's output and gradient for NaN/Inf and name the first op and step (slower)");
}

std::vector<int> seeds_of(const Shared& o, const Preset& p) {
  if (!o.seeds.empty()) return parse_seeds(o.seeds);
  if (o.seed >= 0) return {o.seed};
  return p.seeds;  // empty: the config's own seed (expand_cells reads it)
}

}  // namespace

int run_main(const Experiment& e, int argc, char** argv) {
  CLI::App app{e.description};
  app.require_subcommand(1);
  Shared o;
  o.preset = e.default_preset, o.out = "runs/" + e.name;
  std::vector<std::vector<std::string>> pick(e.axes.size());  // run: --<axis>s
  std::vector<std::string> one(e.axes.size());                // cell: --<axis>
  CLI::App* run = app.add_subcommand("run", "run a sweep: every combination of the preset's axes, for every seed");
  add_shared(run, o);
  CLI::App* cell = app.add_subcommand("cell", "run one cell (one value of each axis), for every seed");
  add_shared(cell, o);
  for (size_t i = 0; i < e.axes.size(); i++) {
    const AxisSpec& a = e.axes[i];
    run->add_option("--" + a.name + "s", pick[i], "only these " + a.name + "s (comma-separated)")->delimiter(',');
    cell->add_option("--" + a.name, one[i], a.help.empty() ? a.name : a.help);
  }
  CLI::App* list = app.add_subcommand("list", "list the axes' values, the presets and what the app adds");
  std::vector<Command> extra = e.commands ? e.commands(app) : std::vector<Command>{};
  Communicator* comm = nullptr;  // made once the command line is valid
  if (const std::string bad = unknown_command(app, argc, argv); !bad.empty()) {
    std::cerr << e.name << ": " << bad << "\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& err) {
    return app.exit(err);
  }

  try {
    for (auto& c : extra)
      if (c.cmd->parsed()) return c.run(), 0;
    if (*list) {
      for (auto& a : e.axes) std::cout << a.name << "s: " << join(a.known) << "\n";
      std::cout << "presets (" << e.presets_dir << "): " << join(preset_names(e.presets_dir)) << "\n";
      if (e.list) e.list(std::cout);
      return 0;
    }
    check_device(o.device);
    set_matmul_precision(parse_precision(o.precision));  // before any cell builds a model
    if (o.precision != "fp32" && !o.quiet) {  // on a GPU cuBLAS does the bf16 products (cuda/gpu.cu), whatever the CPU has
      // The note first: it reads DL_BF16 / DL_AMX and may fail naming a bad value, before anything of this line is out.
      const std::string note = o.device == "cpu" ? precision_note()
                                                 : "precision bf16: matrix products on cuBLAS in bf16 with float32 sums "
                                                   "(CUBLAS_COMPUTE_32F_FAST_16BF)";
      std::cerr << e.name << ": " << note << "\n";
    }
    CLI::App* sweep = *run ? run : cell;
    const bool threads_given = sweep->count("--threads") > 0;
    if (o.jobs > 1 && !threads_given) o.threads = 1;  // one thread per job unless asked otherwise
    set_threads(o.threads);
    if (o.anomaly) set_anomaly_mode(true);  // autograd/anomaly.h; off unless asked for
    install_stop_handlers();
    Preset p = load_preset(o.preset, e.presets_dir, std::vector<Axis>(e.axes.begin(), e.axes.end()));
    std::vector<std::vector<std::string>> values = p.values;
    for (size_t i = 0; i < e.axes.size(); i++) {
      const AxisSpec& a = e.axes[i];
      std::vector<std::string> chosen = *cell ? std::vector<std::string>{one[i]} : pick[i];
      if (*cell && one[i].empty()) {
        if (!a.fallback.empty()) chosen = {a.fallback};
        else if (p.values[i].size() == 1) chosen = p.values[i];
        else throw ConfigError("cell: --" + a.name + " is required (the preset has: " + join(p.values[i]) + ")");
      }
      if (!chosen.empty()) values[i] = chosen;  // (each checked against the axis by the resolver, as every cell is)
    }
    std::vector<Cell> cells = expand_cells(e, p, values, seeds_of(o, p), o.sets);  // resolves (validates) every cell
    comm = &communicator(o.comm, parse_device(o.device));
    SweepOptions so{o.out, o.device, o.resume, o.quiet, -1, comm, o.zero1, o.profile};
    if (o.worker >= 0) {  // a --jobs worker: the cells it claims, its bars into its status file (jobs.h)
      set_progress_file(jobs_dir(o.out) + "/worker" + std::to_string(o.worker) + ".status");
      so.worker = o.worker;
      run_cells(e, p, costliest_first(e, cells), so);
      return 0;
    }
    const bool writer = comm->rank() == 0;
    if (!o.quiet && writer && comm->name() != "single")  // the one line that names the data-parallel setup
      std::cerr << "comm: " << comm->name() << ", " << comm->size() << " rank" << (comm->size() > 1 ? "s" : "") << "\n";
    if (!o.quiet && writer)
      std::cerr << e.name << ": preset " << p.name << ", " << cells.size() << " cell(s) -> " << o.out << "\n";
    if (o.jobs > 1) {  // the same command line in each worker, which then picks its cells
      std::vector<std::string> worker{"/proc/self/exe"};
      worker.insert(worker.end(), e.command.begin(), e.command.end());
      for (int i = 1; i < argc; i++) worker.push_back(argv[i]);
      if (!threads_given) worker.insert(worker.end(), {"--threads", "1"});
      run_cells_in_jobs(e, p, cells, so, o.jobs, worker);
    } else {
      run_cells(e, p, cells, so);
    }
    if (writer) {
      write_reports(e, p, o.out);
      std::cout << read_text(o.out + "/results.md") << "\nwritten: " << o.out << "/results.{json,md}, metrics.csv"
                << (fs::exists(o.out + "/plots") ? ", plots/" : "") << "\n";
    }
  } catch (const Interrupted& i) {
    if (!comm || comm->rank() == 0) std::cerr << e.name << ": " << i.what() << "\n";
    return 130;
  } catch (const std::exception& ex) {
    if (comm && comm->size() > 1) comm->abort(e.name + ": error: " + ex.what());  // the other ranks would wait forever
    std::cerr << e.name << ": error: " << ex.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace dl::harness
