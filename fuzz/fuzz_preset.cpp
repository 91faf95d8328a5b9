// fuzz/fuzz_preset.cpp - libFuzzer target for experiment presets and `--set` overrides (apps/common/config.h
// parse_preset, resolve; apps/lra_benchmark's cell config and its validation). Built by scripts/fuzz.sh; the rule
// is in fuzz_util.h: anything wrong is a ConfigError naming the file, section and field.
//
// The input: the preset's JSON, then (after a NUL byte) one `--set` override per line, applied to every cell.
#include <sstream>

#include "apps/lra_benchmark/config.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = fuzz::split_parts(data, size, 2);
  std::vector<std::string> overrides;
  std::stringstream ss(parts[1]);
  for (std::string line; std::getline(ss, line);) overrides.push_back(line);
  try {
    const dl::harness::Preset p = dl::harness::parse_preset(parts[0], "fuzz.json", lra::axes());
    int cells = 0;
    for (auto& t : p.values.at(0))
      for (auto& mo : p.values.at(1))
        for (auto& r : p.values.at(2))
          if (cells++ < 8) {
            const lra::CellConfig c = lra::resolve_cell(p, t, mo, r, overrides);
            if (c.task != t || c.model != mo || c.regime != r) __builtin_trap();
          }
  } catch (const dl::harness::ConfigError&) {
  }
  return 0;
}
