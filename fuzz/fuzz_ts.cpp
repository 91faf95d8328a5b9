// fuzz/fuzz_ts.cpp - libFuzzer target for the Monash/UEA .ts regression reader (tasks/regression.h; built by
// scripts/fuzz.sh).
//
// Build and run (from the repository root), e.g. for 20 s:
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -I. -DDL_SOURCE_DIR='"."' fuzz/fuzz_ts.cpp \
//       tasks/regression.cpp tasks/dataset.cpp -o /tmp/fuzz_ts
//   /tmp/fuzz_ts -max_total_time=20 -max_len=4096
// The reader must either return series or throw dl::tasks::DataError; anything else is a bug. Every accepted file
// has at least one series, every series as many dimensions as the file, all of one length, and finite values; its
// tokens lie in [0, 256) and number dimensions x length.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tasks/regression.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const dl::tasks::TsFile f = dl::tasks::parse_ts(text, "fuzz.ts");
    if (f.series.empty() || f.dimensions < 1) __builtin_trap();
    for (const auto& s : f.series) {
      if ((int32_t)s.dims.size() != f.dimensions || !std::isfinite(s.target)) __builtin_trap();
      for (const auto& d : s.dims) {
        if (d.size() != s.dims[0].size()) __builtin_trap();
        for (float v : d)
          if (!std::isfinite(v)) __builtin_trap();
      }
    }
    const dl::tasks::Dataset d = dl::tasks::ts_dataset(f, 0, "fuzz");
    for (size_t i = 0; i < d.examples.size(); ++i) {
      const auto& e = d.examples[i];
      if (e.tokens.size() != f.series[i].dims[0].size() * size_t(f.dimensions)) __builtin_trap();
      for (int32_t t : e.tokens)
        if (t < 0 || t >= dl::tasks::kRegressionLevels) __builtin_trap();
    }
  } catch (const dl::tasks::DataError&) {
  }
  return 0;
}
