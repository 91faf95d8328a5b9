// bench/bench_timing.h - the timing and argument helpers the hand-written benchmarks (those not on Google Benchmark:
// bench_generation, bench_seq2seq_decode, bench_onnx_forward) share: wall milliseconds, the median of repeats, and
// comma-separated lists.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace bench {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// The upper median (the middle element of an odd count, the larger middle one of an even count).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The median wall time of f over reps runs after one untimed run (first-touch page faults, plan caches), in ms.
template <class F> double time_ms(int64_t reps, F&& f) {
  f();
  std::vector<double> t;
  for (int64_t i = 0; i < reps; i++) {
    auto t0 = Clock::now();
    f();
    t.push_back(ms_since(t0));
  }
  return median(t);
}

// "a,b,c" -> {"a", "b", "c"}
inline std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');) out.push_back(x);
  return out;
}

}  // namespace bench
