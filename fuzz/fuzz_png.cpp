// fuzz/fuzz_png.cpp - libFuzzer target for the grey-scale PNG reader of the official Pathfinder images
// (tasks/pathfinder.h read_gray_png, on libpng). Built by scripts/fuzz.sh; the rule is in fuzz_util.h. An accepted
// image of the expected 32 x 32 size has exactly 1024 pixels.
#include "fuzz_util.h"
#include "tasks/pathfinder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_scratch("image.png", std::string((const char*)data, size));
  try {
    if (dl::tasks::read_gray_png(path, 32, 32).size() != 32 * 32) __builtin_trap();
  } catch (const dl::tasks::DataError&) {
  }
  try {
    dl::tasks::read_gray_png(path);  // any size
  } catch (const dl::tasks::DataError&) {
  }
  return 0;
}
