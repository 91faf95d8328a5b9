// tests/common/bf16_kernels.h - the bf16 product kernels this CPU runs, for tests that check each of them: the
// VDPBF16PS register tiles wherever bf16 is usable, and the AMX tiles where amx::usable() (tensor/bf16_amx.h). The
// CPUID choice takes AMX where it can, so without these loops an AMX machine would never test the VDPBF16PS tiles.
// And a scope that sets the matmul precision (tensor/bf16.h) for a test.
#pragma once
#include <string>
#include <vector>

#include "tensor/bf16.h"
#include "tensor/bf16_amx.h"
#include "tensor/bf16_gemm.h"

namespace dl::test {

// As set_bf16_tile shapes: 0 (the VDPBF16PS 6 x 4 tile), then 3 (AMX) where usable.
inline std::vector<int> bf16_kernels() {
  std::vector<int> k{0};
  if (amx::usable()) k.push_back(3);
  return k;
}
inline std::string bf16_kernel_name(int shape) { return shape == 3 ? "AMX" : "VDPBF16PS tile " + std::to_string(shape); }

// The shape for the scope, then the previous one back.
struct UseBf16Kernel {
  int was;
  explicit UseBf16Kernel(int shape) : was(set_bf16_tile(shape)) {}
  ~UseBf16Kernel() { set_bf16_tile(was); }
  UseBf16Kernel(const UseBf16Kernel&) = delete;
  UseBf16Kernel& operator=(const UseBf16Kernel&) = delete;
};

// The matmul precision for the scope, then the previous one back.
struct PrecisionScope {
  Precision was;
  explicit PrecisionScope(Precision p) : was(set_matmul_precision(p)) {}
  ~PrecisionScope() { set_matmul_precision(was); }
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;
};

}  // namespace dl::test
