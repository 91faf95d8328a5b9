// fuzz/fuzz_wav.cpp - libFuzzer target for the RIFF/WAVE reader (Speech Commands clips, tasks/speech.h parse_wav).
// Built by scripts/fuzz.sh (CMake option DL_FUZZ); the rule is in fuzz_util.h. An accepted file must have a positive
// sample rate, 1 or more channels and a whole number of frames.
#include <string_view>

#include "fuzz_util.h"
#include "tasks/speech.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const dl::tasks::WavData w = dl::tasks::parse_wav(std::string_view((const char*)data, size), "fuzz.wav");
    if (w.sample_rate <= 0 || w.channels < 1 || w.samples.size() % (size_t)w.channels != 0) __builtin_trap();
  } catch (const dl::tasks::DataError&) {
  }
  return 0;
}
