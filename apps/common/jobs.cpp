// apps/common/jobs.cpp - see jobs.h.
#include "apps/common/jobs.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "apps/common/progress.h"
#include "apps/common/signals.h"

namespace dl::harness {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string jobs_dir(const std::string& out) { return out + "/jobs"; }

static std::string claim_path(const std::string& out, const Cell& c) { return jobs_dir(out) + "/claims/" + c.name(); }

bool claim_cell(const std::string& out, const Cell& c, int k) {
  const std::string path = claim_path(out, c);
  const int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
  if (fd >= 0) {
    const std::string who = std::to_string(k) + "\n";
    const bool ok = ::write(fd, who.data(), who.size()) == (ssize_t)who.size();
    ::close(fd);
    if (!ok) throw std::runtime_error(path + ": cannot write the claim");
    return true;
  }
  if (errno == EEXIST) return false;  // another worker has it
  throw std::runtime_error(path + ": cannot claim the cell: " + std::strerror(errno));
}

void mark_cell_done(const std::string& out, const Cell& c) { write_text_atomic(claim_path(out, c) + ".done", "done\n"); }

std::vector<Cell> costliest_first(const Experiment& e, const std::vector<Cell>& cells) {
  std::vector<Cell> order = cells;
  if (e.cost)
    std::stable_sort(order.begin(), order.end(), [&](const Cell& a, const Cell& b) { return e.cost(a) > e.cost(b); });
  return order;
}

// ---- the parent ----
namespace {

struct Worker {
  int k = 0;
  pid_t pid = -1;
  bool running = false;
  int status = 0;  // exit status; 128 + n when killed by signal n
  std::string log, status_file;
};

// Starts `argv` with stdout and stderr appended to `log`, in its own process group (so a Ctrl-C at the terminal
// reaches only the parent), and dying with the parent.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) throw std::runtime_error(log + ": cannot open a worker's log: " + std::strerror(errno));
  const pid_t parent = ::getpid();
  std::cout.flush(), std::cerr.flush();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    throw std::runtime_error(std::string("--jobs: cannot start a worker process: ") + std::strerror(errno));
  }
  if (pid == 0) {  // the child: only async-signal-safe calls until exec
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(1);  // the parent died before the line above
    ::dup2(fd, 1), ::dup2(fd, 2), ::close(fd);
    ::execv(args[0], args.data());
    const char msg[] = "--jobs: cannot start the worker executable\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(fd);
  return pid;
}

std::string first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

std::string last_lines(const std::string& path, size_t n) {
  std::ifstream f(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(f, l);) lines.push_back(l);
  std::string s;
  for (size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); i++) s += "  " + lines[i] + "\n";
  return s;
}

std::string minutes(double s) {
  std::ostringstream os;
  os << (int)s / 60 << " min " << (int)s % 60 << " s";
  return os.str();
}

int terminal_width() {
  winsize w{};
  if (::ioctl(2, TIOCGWINSZ, &w) == 0 && w.ws_col > 20) return w.ws_col;
  return 120;
}

}  // namespace

std::vector<CellResult> run_cells_in_jobs(const Experiment& e, const Preset& p, const std::vector<Cell>& cells,
                                          const SweepOptions& o, int jobs, const std::vector<std::string>& worker_command) {
  if (o.comm->size() > 1)
    throw ConfigError("--jobs runs cells side by side in processes of one machine; under mpirun each cell is already "
                      "data-parallel over the ranks: use one or the other");
  if (o.device != "cpu")
    throw ConfigError("--jobs shares the CPU cores between cells; with --device " + o.device + " run the cells one after "
                      "another (--jobs 1)");
  make_run_folder(o.out);
  RunLock lock(o.out);  // the workers write under the parent's lock
  const std::string jd = jobs_dir(o.out);
  fs::remove_all(jd + "/claims");  // claims of an earlier, stopped run: its finished cells have their result.json
  fs::create_directories(jd + "/claims");

  std::vector<bool> done(cells.size(), false);
  size_t n_done = 0;
  for (size_t i = 0; i < cells.size(); i++)
    if (o.resume && fs::exists(result_path(o.out, cells[i]))) done[i] = true, n_done++;
  const bool show = !o.quiet;
  if (show && n_done > 0) std::cerr << n_done << " cell(s) finished earlier, skipped (--resume)\n";
  jobs = std::min<int>(jobs, (int)(cells.size() - n_done));

  std::vector<Worker> ws(std::max(jobs, 0));
  for (int k = 0; k < jobs; k++) {
    Worker& w = ws[k];
    w.k = k, w.log = jd + "/worker" + std::to_string(k) + ".log", w.status_file = jd + "/worker" + std::to_string(k) + ".status";
    fs::remove(w.status_file);
    std::vector<std::string> argv = worker_command;
    argv.push_back("--worker");
    argv.push_back(std::to_string(k));
    w.pid = spawn(argv, w.log), w.running = true;
  }
  if (show && jobs > 0)
    std::cerr << jobs << " jobs, one cell each at a time; their logs: " << jd << "/worker<k>.log\n";

  const bool tty = ::isatty(2);
  const auto t0 = Clock::now();
  auto last_plain = t0;
  int drawn = 0;  // status lines on the screen below the finished cells (a terminal)
  bool stopping = false;
  int failed = -1;
  auto running = [&] { return std::any_of(ws.begin(), ws.end(), [](const Worker& w) { return w.running; }); };
  auto stop_all = [&] {
    if (stopping) return;
    stopping = true;
    for (auto& w : ws)
      if (w.running) ::kill(w.pid, SIGTERM);  // each checkpoints its phase and exits with 130
  };
  while (running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    for (auto& w : ws) {
      int st = 0;
      if (!w.running || ::waitpid(w.pid, &st, WNOHANG) != w.pid) continue;
      w.running = false;
      w.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      if (w.status == 130 || w.status == 128 + SIGTERM) stop_all();  // stopped by a signal of its own: stop the rest
      else if (w.status != 0 && failed < 0) failed = w.k, stop_all();
    }
    if (stop_requested()) stop_all();

    std::vector<std::string> finished;
    for (size_t i = 0; i < cells.size(); i++) {
      if (done[i] || !fs::exists(claim_path(o.out, cells[i]) + ".done")) continue;
      done[i] = true, n_done++;
      std::ostringstream line;
      line << "[" << cells[i].label() << "] finished";
      try {  // the accuracies most apps record, and the cell's wall time
        CellResult r = read_result(o.out, cells[i]);
        for (auto [metric, shown] : {std::pair{"val_acc", "val"}, std::pair{"test_acc", "test"}})
          if (r.metrics.count(metric)) line << " " << shown << " " << std::fixed << std::setprecision(1) << 100 * r.metrics[metric] << "%";
        line << " in " << minutes(r.wall_s);
      } catch (const std::exception&) {  // the parent only reports: the worker has checked its result
      }
      line << " (" << n_done << "/" << cells.size() << " cells)";
      finished.push_back(line.str());
    }
    if (!finished.empty()) write_reports(e, p, o.out);
    if (!show) continue;

    std::vector<std::string> status;
    for (auto& w : ws)
      if (w.running) {
        std::string s = first_line(w.status_file);
        status.push_back(" job " + std::to_string(w.k) + ": " + (s.empty() ? "starting" : s));
      }
    status.push_back(" " + std::to_string(n_done) + "/" + std::to_string(cells.size()) + " cells finished, " +
                     minutes(std::chrono::duration<double>(Clock::now() - t0).count()) + " elapsed" +
                     (stopping ? ", stopping (the running cells checkpoint)" : ""));
    if (tty) {  // finished cells scroll above; the status block is redrawn in place below them
      const size_t width = terminal_width() - 1;
      std::string frame = drawn > 0 ? "\033[" + std::to_string(drawn) + "F" : "";
      for (auto& l : finished) frame += l + "\033[K\n";
      for (auto& l : status) frame += l.substr(0, width) + "\033[K\n";
      frame += "\033[J";
      std::cerr << frame << std::flush;
      drawn = (int)status.size();
    } else {  // a log: finished cells as they come, the status every 30 s
      for (auto& l : finished) std::cerr << l << "\n";
      if (std::chrono::duration<double>(Clock::now() - last_plain).count() >= 30) {
        last_plain = Clock::now();
        for (auto& l : status) std::cerr << l << "\n";
      }
    }
  }

  if (failed >= 0) {
    const Worker& w = ws[failed];
    throw std::runtime_error("job " + std::to_string(w.k) + " failed (exit status " + std::to_string(w.status) +
                             "); the end of its log " + w.log + ":\n" + last_lines(w.log, 12));
  }
  if (stopping || n_done < cells.size())
    throw Interrupted("stopped with " + std::to_string(n_done) + " of " + std::to_string(cells.size()) +
                      " cells finished; the running ones wrote checkpoints (continue with --resume)");
  std::vector<CellResult> rs;
  for (auto& c : cells) rs.push_back(read_result(o.out, c));
  return rs;
}

// ---- a lock on a cache folder ----
FolderLock::FolderLock(const std::string& dir, bool quiet) {
  const std::string path = fs::path(dir).lexically_normal().string() + ".lock";
  fs::create_directories(fs::path(path).parent_path());
  fd_ = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(path + ": cannot open the cache lock: " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
  if (!quiet) std::cerr << "waiting for another process that builds " << dir << "\n";
  progress_note("waiting for another process that builds " + dir);
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {  // polled, so that a stop request is seen while waiting
    if (errno != EWOULDBLOCK && errno != EINTR)
      throw std::runtime_error(path + ": cannot take the cache lock: " + std::strerror(errno));
    if (stop_requested()) {
      ::close(fd_);
      throw Interrupted("stopped while waiting for " + dir);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace dl::harness
