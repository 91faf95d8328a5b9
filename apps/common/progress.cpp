// apps/common/progress.cpp - see progress.h.
#include "apps/common/progress.h"

#include <unistd.h>

#include <iomanip>
#include <iostream>
#include <sstream>

#include "apps/common/results.h"  // write_text_atomic

namespace dl::harness {

static std::string g_progress_file;  // set once, before any cell runs (a worker's main)

void set_progress_file(const std::string& path) { g_progress_file = path; }

void progress_note(const std::string& line) {
  if (!g_progress_file.empty()) write_text_atomic(g_progress_file, line + "\n");
}

Progress::Progress(std::string label, int total, int start, bool quiet)
    : label_(std::move(label)), total_(total), start_(start), tty_(isatty(2)), quiet_(quiet),
      t0_(std::chrono::steady_clock::now()), last_print_(t0_) {}

void Progress::update(int step, double loss, double acc) {
  if (quiet_) return;
  auto now = std::chrono::steady_clock::now();
  double since = std::chrono::duration<double>(now - last_print_).count();
  bool last = step >= total_;
  const bool to_file = !g_progress_file.empty();
  if (!last && since < (to_file ? 0.5 : tty_ ? 0.2 : 10.0)) return;
  last_print_ = now;
  double el = std::chrono::duration<double>(now - t0_).count();
  double rate = el > 0 ? (step - start_) / el : 0;
  double eta = rate > 0 ? (total_ - step) / rate : 0;
  int width = 24, fill = total_ > 0 ? (int)((double)step / total_ * width) : width;
  std::ostringstream os;
  os << label_ << " " << std::setw(5) << step << "/" << total_ << " [" << std::string(fill, '=') << std::string(width - fill, ' ')
     << "] loss " << std::fixed << std::setprecision(4) << loss;
  if (acc >= 0) os << " acc " << std::setprecision(3) << acc;
  os << std::setprecision(1) << " " << rate << " it/s ETA " << (int)eta << "s";
  if (to_file) write_text_atomic(g_progress_file, os.str() + "\n");
  else if (tty_) std::cerr << "\r" << os.str() << "\033[K" << std::flush;
  else std::cerr << os.str() << "\n";
}

void Progress::finish() {
  if (tty_ && !quiet_ && g_progress_file.empty()) std::cerr << "\n";
}

}  // namespace dl::harness
