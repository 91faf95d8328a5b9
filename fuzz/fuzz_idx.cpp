// fuzz/fuzz_idx.cpp - libFuzzer target for the IDX, CIFAR-10 and Netpbm readers (built by scripts/fuzz.sh).
//
// Build and run (from the repository root), e.g. for 20 s:
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -I. fuzz/fuzz_idx.cpp tasks/image.cpp -lz \
//       -o /tmp/fuzz_idx
//   /tmp/fuzz_idx -max_total_time=20 -max_len=8192
// parse_idx must return an array whose data size is the product of its dims, or throw DataError; parse_netpbm one
// image of rows x cols gray pixels, or throw DataError.
#include <cstddef>
#include <cstdint>

#include "tasks/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const dl::tasks::IdxArray a = dl::tasks::parse_idx(data, size, "fuzz.idx");
    size_t count = 1;
    for (uint32_t d : a.dims) count *= d;
    if (a.dims.empty() || count != a.data.size()) __builtin_trap();
  } catch (const dl::tasks::DataError&) {
  }
  try {
    const dl::tasks::ImageSet s = dl::tasks::parse_cifar10_batch(data, size, "fuzz.bin");
    if (s.pixels.size() != s.size() * 1024) __builtin_trap();
  } catch (const dl::tasks::DataError&) {
  }
  try {
    const dl::tasks::ImageSet s = dl::tasks::parse_netpbm(data, size, "fuzz.pgm");
    if (s.size() != 1 || s.channels != 1 || s.pixels.size() != (size_t)s.rows * s.cols) __builtin_trap();
  } catch (const dl::tasks::DataError&) {
  }
  return 0;
}
