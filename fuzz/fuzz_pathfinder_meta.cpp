// fuzz/fuzz_pathfinder_meta.cpp - libFuzzer target for the Pathfinder metadata parser.
//
// Build and run (from the repository root; scripts/fuzz.sh builds it in build-fuzz/):
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -I. \
//       fuzz/fuzz_pathfinder_meta.cpp tasks/pathfinder_io.cpp tasks/pathfinder.cpp -lpng -lz \
//       -o /tmp/fuzz_pathfinder_meta
//   /tmp/fuzz_pathfinder_meta -max_total_time=20 -max_len=4096
//
// What it checks: parse_pathfinder_metadata never crashes, reads out of bounds or throws anything but
// DataError on arbitrary bytes, and every record it accepts satisfies the documented invariants.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tasks/pathfinder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    for (const dl::tasks::PathfinderMetaRecord& r : dl::tasks::parse_pathfinder_metadata(text, "fuzz.npy")) {
      const bool ok = !r.image_dir.empty() && r.file_name.size() >= 5 && r.index >= 0 && (r.label == 0 || r.label == 1) &&
                      r.image_dir.find("..") == std::string::npos && r.image_dir.front() != '/';
      if (!ok) std::abort();
    }
  } catch (const dl::tasks::DataError&) {
    // rejected input: the expected outcome for most random bytes
  }
  return 0;
}
