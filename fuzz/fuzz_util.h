// fuzz/fuzz_util.h - what the libFuzzer targets share: a per-process scratch folder for readers that take a path,
// and the rule every target checks.
//
// The rule: on any bytes, a reader returns a value that satisfies its documented invariants or throws the error type
// it documents (DataError, ConfigError, CheckpointError, SafetensorsError), whose message names the source. Anything
// else - a crash, a sanitizer report, a hang, another exception type (a json::type_error or std::out_of_range that
// escaped) - is a bug; the target aborts with __builtin_trap() and libFuzzer saves the input.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace fuzz {

// A folder of this process's own under the system temp folder (created once, reused by every input).
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    const std::string d = (std::filesystem::temp_directory_path() / ("dl_fuzz_" + std::to_string(getpid()))).string();
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

// Writes `bytes` to <scratch>/<name> (replacing it) and returns the path.
inline std::string write_scratch(const std::string& name, const std::string& bytes) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), (std::streamsize)bytes.size());
  return path;
}

// The input cut into `n` parts at its first n - 1 NUL bytes (the later parts may be empty), so one input can carry
// several files (a checkpoint's manifest, model and state) or a file and its overrides.
inline std::vector<std::string> split_parts(const uint8_t* data, size_t size, size_t n) {
  std::vector<std::string> parts(n);
  size_t p = 0, start = 0;
  for (size_t i = 0; i < size && p + 1 < n; i++)
    if (data[i] == 0) parts[p++].assign((const char*)data + start, i - start), start = i + 1;
  parts[p].assign((const char*)data + start, size - start);
  return parts;
}

}  // namespace fuzz
