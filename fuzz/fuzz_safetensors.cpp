// fuzz/fuzz_safetensors.cpp - libFuzzer target for the safetensors reader (checkpoints and test fixtures).
//
// Build and run (from the repository root), e.g. for 20 s:
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fopenmp -I. fuzz/fuzz_safetensors.cpp \
//       tensor/safetensors.cpp tensor/tensor.cpp tensor/allocator.cpp tensor/elementwise.cpp cuda/backend_stub.cpp \
//       -o /tmp/fuzz_safetensors
//   /tmp/fuzz_safetensors -max_total_time=20 -max_len=4096
// parse_safetensors must return tensors whose byte size matches their shape and dtype, or throw
// SafetensorsError; anything else (a crash, a sanitizer report, another exception type) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tensor/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    dl::TensorFile f = dl::parse_safetensors(std::string((const char*)data, size), "fuzz");
    for (auto& [name, t] : f.tensors)
      if (t.numel() < 0) __builtin_trap();
  } catch (const dl::SafetensorsError&) {
  }
  return 0;
}
