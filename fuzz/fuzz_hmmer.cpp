// fuzz/fuzz_hmmer.cpp - libFuzzer target for the HMMER3 profile reader of apps/fpt's homology stand-in
// (tasks/homology.h parse_hmmer3) and the sampler that emits sequences from what it read. Built by scripts/fuzz.sh;
// the rule is in fuzz_util.h: every distribution it accepts sums to 1, and sampling ends with ids 0..19.
#include <cmath>

#include "fuzz_util.h"
#include "tasks/homology.h"

template <size_t N> static void check_distribution(const std::array<double, N>& p, size_t from, size_t to) {
  double sum = 0;
  for (size_t i = from; i < to; i++) {
    if (!(p[i] >= 0 && p[i] <= 1)) __builtin_trap();  // also catches NaN
    sum += p[i];
  }
  if (std::abs(sum - 1) > 1e-9) __builtin_trap();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dl::tasks;
  try {
    const std::vector<ProfileHmm> hmms = parse_hmmer3(std::string_view((const char*)data, size), "fuzz.hmm");
    if (hmms.empty()) __builtin_trap();
    std::mt19937_64 rng(1);
    for (size_t m = 0; m < hmms.size() && m < 4; m++) {
      const ProfileHmm& h = hmms[m];
      if (h.length < 1 || h.name.empty()) __builtin_trap();
      const size_t n = (size_t)h.length + 1;
      if (h.match.size() != n || h.insert.size() != n || h.trans.size() != n) __builtin_trap();
      for (size_t k = 0; k < n; k++) {
        if (k > 0) check_distribution(h.match[k], 0, kAminoAcids);
        check_distribution(h.insert[k], 0, kAminoAcids);
        check_distribution(h.trans[k], kMM, kMD + 1), check_distribution(h.trans[k], kIM, kII + 1);
        check_distribution(h.trans[k], kDM, kDD + 1);
      }
      const std::vector<int32_t> seq = emit_sequence(h, rng);
      if (seq.size() > 4 * (size_t)h.length + 100) __builtin_trap();  // the documented cap: no endless insert loop
      for (int32_t a : seq)
        if (a < 0 || a >= kAminoAcids) __builtin_trap();
    }
  } catch (const DataError&) {
  }
  return 0;
}
