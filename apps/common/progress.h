// apps/common/progress.h - a one-line progress bar on stderr with rate and ETA: redrawn in place on a terminal,
// a plain line every 10 s otherwise (logs), nothing when quiet.
#pragma once
#include <chrono>
#include <string>

namespace dl::harness {

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
