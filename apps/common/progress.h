// apps/common/progress.h - a one-line progress bar on stderr with rate and ETA: redrawn in place on a terminal,
// a plain line every 10 s otherwise (logs), nothing when quiet. In a --jobs worker (jobs.h) the line goes instead
// to the worker's status file, rewritten at most twice a second, and the parent shows it.
#pragma once
#include <chrono>
#include <string>

namespace dl::harness {

// Every Progress of this process writes its line to `path` (atomically) instead of stderr; "" goes back to stderr.
void set_progress_file(const std::string& path);
// A line for the status file between bars ("... starting", "waiting for ..."); nothing without a status file.
void progress_note(const std::string& line);

class Progress {
 public:
  Progress(std::string label, int total, int start = 0, bool quiet = false);
  void update(int step, double loss, double acc = -1);  // acc < 0: not shown
  void finish();

 private:
  std::string label_;
  int total_, start_;
  bool tty_, quiet_;
  std::chrono::steady_clock::time_point t0_, last_print_;
};

}  // namespace dl::harness
