// apps/common/results.cpp - cells, results and the run folder's files (see results.h).
#include "apps/common/results.h"

#include "apps/common/config.h"  // ConfigError

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "apps/common/config.h"
#include "tensor/safetensors.h"

namespace dl::harness {

namespace fs = std::filesystem;

std::string Cell::name() const { return join(values, "__") + "__seed" + std::to_string(seed); }
std::string Cell::key() const { return join(values, "/"); }
std::string Cell::label() const { return key() + " seed " + std::to_string(seed); }

const std::string& Cell::value(const std::string& axis) const {
  for (size_t i = 0; i < axes.size(); i++)
    if (axes[i] == axis) return values.at(i);
  throw std::logic_error("cell " + label() + " has no axis '" + axis + "' (axes: " + join(axes) + ")");
}

// JSON has no NaN: an unmeasured value is written as null.
static json number_or_null(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }
static double number_or_nan(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : std::numeric_limits<double>::quiet_NaN();
}

json CurvePoint::to_json() const {
  return {
      {"phase", phase},       {"step", step}, {"train_loss", number_or_null(train_loss)}, {"val_loss", number_or_null(val_loss)},
      {"accuracy", accuracy}, {"lr", lr}};
}
CurvePoint CurvePoint::from_json(const json& j) {
  CurvePoint p;
  p.phase = j.at("phase"), p.step = j.at("step");
  p.train_loss = number_or_nan(j, "train_loss"), p.val_loss = number_or_nan(j, "val_loss");
  p.accuracy = j.at("accuracy"), p.lr = j.at("lr");
  return p;
}

double CellResult::metric(const std::string& name) const {
  auto it = metrics.find(name);
  if (it == metrics.end()) throw std::logic_error("result of " + cell.label() + " has no metric '" + name + "'");
  return it->second;
}

json CellResult::to_json() const {
  json axes = json::object(), m = json::object(), c = json::array();
  for (size_t i = 0; i < cell.axes.size(); i++) axes[cell.axes[i]] = cell.values.at(i);
  for (auto& [k, v] : metrics) m[k] = number_or_null(v);
  for (auto& p : curve) c.push_back(p.to_json());
  return {{"cell", cell.name()}, {"axes", axes},          {"axis_order", cell.axes},
          {"seed", cell.seed},   {"metrics", m},          {"test_examples", test_examples},
          {"params", params},    {"wall_s", wall_s},      {"steps_per_s", steps_per_s},
          {"curve", c},          {"config", cell.config}, {"extra", extra}};
}

CellResult CellResult::from_json(const json& j) {
  CellResult r;
  for (auto& a : j.at("axis_order")) {
    r.cell.axes.push_back(a);
    r.cell.values.push_back(j.at("axes").at(a.get<std::string>()));
  }
  r.cell.seed = j.at("seed");
  r.cell.config = j.value("config", json::object());
  for (auto& [k, v] : j.at("metrics").items())
    r.metrics[k] = v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN();
  r.test_examples = j.value("test_examples", (int64_t)0), r.params = j.value("params", (int64_t)0);
  r.wall_s = j.value("wall_s", 0.0), r.steps_per_s = j.value("steps_per_s", 0.0);
  for (auto& p : j.value("curve", json::array())) r.curve.push_back(CurvePoint::from_json(p));
  r.extra = j.value("extra", json::object());
  return r;
}

void write_text_atomic(const std::string& path, const std::string& text) {
  fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent);
  dl::atomic_write_file(path, text);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open (missing or unreadable)");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json read_cache_info(const std::string& dir) {
  return parse_json(read_text(dir + "/info.json"), dir + "/info.json (a cache: delete its folder to build it again)");
}

std::string cell_dir(const std::string& out, const Cell& c) { return out + "/cells/" + c.name(); }
std::string result_path(const std::string& out, const Cell& c) { return cell_dir(out, c) + "/result.json"; }

void write_result(const std::string& out, const CellResult& r) {
  write_text_atomic(result_path(out, r.cell), r.to_json().dump(2) + "\n");
}

CellResult read_result(const std::string& out, const Cell& c) {
  const std::string path = result_path(out, c);
  try {
    return CellResult::from_json(json::parse(read_text(path)));
  } catch (const json::exception& e) {
    throw ConfigError(path + ": a finished cell's result is damaged (" + e.what() + "); delete that file to run the cell again");
  }
}

std::vector<CellResult> collect_results(const std::string& out) {
  std::vector<CellResult> rs;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(out + "/cells", ec)) {
    fs::path r = e.path() / "result.json";
    if (!fs::exists(r)) continue;
    try {
      rs.push_back(CellResult::from_json(json::parse(read_text(r.string()))));
    } catch (const std::exception& ex) {
      std::cerr << "warning: skipping unreadable " << r.string() << ": " << ex.what() << "\n";
    }
  }
  std::sort(rs.begin(), rs.end(), [](auto& a, auto& b) { return a.cell.name() < b.cell.name(); });
  return rs;
}

static const char* kCsvHeader = "cell,phase,step,train_loss,val_loss,accuracy,lr\n";

static std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> f;
  std::stringstream ss(line);
  for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
  return f;
}
static constexpr size_t kCsvFields = 7;

void append_metrics_csv(const std::string& path, const std::string& cell, const CurvePoint& p) {
  std::ostringstream row;
  if (!fs::exists(path)) {
    fs::path parent = fs::path(path).parent_path();
    if (!parent.empty()) fs::create_directories(parent);
    row << kCsvHeader;
  }
  row << cell << "," << p.phase << "," << p.step << "," << p.train_loss << "," << p.val_loss << "," << p.accuracy << "," << p.lr
      << "\n";
  std::ofstream f(path, std::ios::app);
  f << row.str() << std::flush;  // one write
}

void truncate_metrics_csv(const std::string& path, const std::string& phase, int step) {
  std::ifstream in(path);
  if (!in) return;
  std::string line, kept;
  while (std::getline(in, line)) {
    std::vector<std::string> f = csv_fields(line);
    bool drop = f.size() != kCsvFields || (f[1] == phase && std::atoi(f[2].c_str()) > step);
    if (!drop) kept += line + "\n";
  }
  write_text_atomic(path, kept);
}

std::vector<CurvePoint> read_metrics_csv(const std::string& path) {
  std::vector<CurvePoint> rows;
  std::ifstream in(path);
  std::string line;
  for (bool header = true; std::getline(in, line); header = false) {
    std::vector<std::string> f = csv_fields(line);
    if (header || f.size() != kCsvFields) continue;
    CurvePoint p;
    p.phase = f[1], p.step = std::atoi(f[2].c_str());
    p.train_loss = std::strtod(f[3].c_str(), nullptr), p.val_loss = std::strtod(f[4].c_str(), nullptr);  // "nan" reads as NaN
    p.accuracy = std::strtod(f[5].c_str(), nullptr), p.lr = std::strtod(f[6].c_str(), nullptr);
    rows.push_back(p);
  }
  return rows;
}

void write_run_metrics(const std::string& out, const std::vector<CellResult>& rs) {
  std::ostringstream m;
  m << kCsvHeader;
  for (auto& r : rs) {
    std::ifstream in(cell_dir(out, r.cell) + "/metrics.csv");
    std::string line;
    for (bool header = true; std::getline(in, line); header = false)
      if (!header) m << line << "\n";
  }
  write_text_atomic(out + "/metrics.csv", m.str());
}

// Whether process pid is running: it exists (kill 0) and has not exited. An exited process whose parent has not reaped
// it yet (a zombie: state Z in /proc/<pid>/stat; e.g. a rank that MPI_Abort ended after its mpirun was gone) holds
// nothing, so its lock is stale.
static bool process_running(long pid) {
  if (pid <= 0 || !(::kill((pid_t)pid, 0) == 0 || errno == EPERM)) return false;
  std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(st, line)) return true;  // no /proc: trust kill
  const size_t close = line.rfind(')');      // "pid (comm) S ...": the state follows the command's closing parenthesis
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

RunLock::RunLock(const std::string& out) : path_(out + "/.lock") {
  std::filesystem::create_directories(out);
  for (int attempt = 0; attempt < 2; attempt++) {
    const int fd = ::open(path_.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd >= 0) {
      const std::string pid = std::to_string(::getpid()) + "\n";
      const bool ok = ::write(fd, pid.data(), pid.size()) == (ssize_t)pid.size();
      ::close(fd);
      if (!ok) throw std::runtime_error(path_ + ": cannot write the run lock");
      owned_ = true;
      return;
    }
    if (errno != EEXIST) throw std::runtime_error(path_ + ": cannot create the run lock: " + std::strerror(errno));
    long pid = 0;
    std::ifstream(path_) >> pid;
    if (pid == ::getpid()) return;  // this process holds it already (a nested call)
    if (process_running(pid))
      throw std::runtime_error(out + " is in use by another run (pid " + std::to_string(pid) + ", " + path_ +
                               "): wait for it to finish, or choose another --out");
    std::filesystem::remove(path_);  // stale: its process is gone
  }
  throw std::runtime_error(path_ + ": cannot take over a stale run lock");
}

RunLock::~RunLock() {
  if (owned_) {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
}

}  // namespace dl::harness
