// fuzz/fuzz_digits.cpp - libFuzzer target for the 8x8 digits file of apps/fpt (tasks/digits.h parse_digits_csv: 65
// comma-separated integers a line, 64 pixels 0..16 and a label 0..9) and the fixed split made from its labels.
// Built by scripts/fuzz.sh; the rule is in fuzz_util.h.
#include "fuzz_util.h"
#include "tasks/digits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const dl::tasks::DigitImages d = dl::tasks::parse_digits_csv(std::string_view((const char*)data, size), "fuzz.csv");
    if (d.size() == 0 || d.pixels.size() != 64 * d.size()) __builtin_trap();  // at least one image, 64 pixels each
    for (uint8_t p : d.pixels)
      if (p > dl::tasks::kDigitsMaxPixel) __builtin_trap();
    for (int32_t l : d.labels)
      if (l < 0 || l > 9) __builtin_trap();
    const dl::tasks::DigitsSplit s = dl::tasks::digits_split(d.labels);  // disjoint, and every image in one split
    std::vector<int> seen(d.size(), 0);
    for (const auto* part : {&s.train, &s.val, &s.test})
      for (int32_t i : *part) {
        if (i < 0 || (size_t)i >= d.size() || seen[i]++) __builtin_trap();
      }
    for (int v : seen)
      if (v != 1) __builtin_trap();
  } catch (const dl::tasks::DataError&) {
  }
  return 0;
}
