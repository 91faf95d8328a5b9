// fuzz/fuzz_tsv.cpp - libFuzzer target for the ListOps and AAN TSV readers (built by scripts/fuzz.sh).
//
// Build and run (from the repository root), e.g. for 20 s:
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -I. -DDL_SOURCE_DIR='"."' fuzz/fuzz_tsv.cpp \
//       tasks/listops.cpp tasks/retrieval.cpp tasks/text.cpp tasks/brown.cpp tasks/tokenizer.cpp -o /tmp/fuzz_tsv
//   /tmp/fuzz_tsv -max_total_time=20 -max_len=4096
// The readers must either return samples or throw dl::tasks::DataError; anything else (a crash, another
// exception, a sanitizer report) is a bug. Every accepted ListOps source must also tokenize and, when it is
// one well-formed expression, evaluate to a digit.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tasks/listops.h"
#include "tasks/retrieval.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& s : dl::tasks::parse_listops_tsv(text, "fuzz.tsv")) {
      if (s.target < 0 || s.target > 9) __builtin_trap();
      try {
        const int32_t v = dl::tasks::evaluate_listops(s.source, "fuzz.tsv");
        if (v < 0 || v > 9) __builtin_trap();
      } catch (const dl::tasks::DataError&) {
      }
    }
  } catch (const dl::tasks::DataError&) {
  }
  try {
    for (const auto& p : dl::tasks::parse_aan_tsv(text, "fuzz.tsv"))
      if (p.label != 0 && p.label != 1) __builtin_trap();
  } catch (const dl::tasks::DataError&) {
  }
  return 0;
}
