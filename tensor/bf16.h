// tensor/bf16.h - bfloat16 numbers, the CPU features that decide whether this machine computes with them, and the
// process-wide precision of the library's matrix products.
//
// bfloat16 is the upper half of an IEEE float32: 1 sign bit, the same 8 exponent bits, 7 mantissa bits. So it has
// float32's range (no overflow when converting a finite float that is not within half an ulp of FLT_MAX) and about
// 2-3 significant decimal digits. A float converts by rounding its lower 16 bits away, to nearest with ties to even:
//   bits + 0x7FFF + ((bits >> 16) & 1), then keep the upper 16 bits.
// NaN stays NaN (quieted, sign kept: the rounding add could otherwise carry a NaN's payload into the exponent and
// make it an infinity); +-inf stay; a float32 denormal rounds to a bf16 denormal (or to zero / the smallest normal)
// exactly as the formula says - the conversion is done in software, so it is the same on every CPU. (The hardware
// instruction VCVTNE2PS2BF16 flushes denormals to zero; the dot product VDPBF16PS treats denormal bf16 inputs as
// zero: see bf16_gemm.h.)
//
// Precision (PyTorch's torch.set_float32_matmul_precision / autocast, in one switch): under Precision::bf16 every
// float32 product that goes through dl::gemm (matmul, linear, their backwards, the convolutions' im2col products)
// converts its two operands to bf16 and accumulates in float32 - where bf16_gemm_usable() holds. Nothing else
// changes: tensors stay float32, so norms, softmax, losses, reductions, master weights and optimizer state stay in
// float32. Where the CPU has no bf16 arithmetic (or DL_BF16=off), products stay in float32 and precision_note() says so.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

namespace dl {

// ---- conversion (round to nearest, ties to even; see the box) ----
inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x0040u);  // NaN: quiet it, keep the sign
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
inline float bf16_to_float(uint16_t h) {
  const uint32_t u = (uint32_t)h << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float round_to_bf16(float f) { return bf16_to_float(float_to_bf16(f)); }
void floats_to_bf16(const float* x, uint16_t* y, int64_t n);

// ---- what this CPU has (CPUID, read once) ----
struct CpuInfo {
  std::string vendor;  // "AuthenticAMD", "GenuineIntel", ...
  int family = 0, model = 0;
  bool avx2 = false, fma = false;
  bool avx512 = false;       // AVX512 F, BW and VL, with the OS saving the 512-bit registers
  bool avx512_bf16 = false;  // VDPBF16PS / VCVTNE2PS2BF16 (CPUID leaf 7 subleaf 1, EAX bit 5)
  bool amx_bf16 = false;     // AMX-TILE and AMX-BF16 (leaf 7 EDX bits 24, 22), with the OS saving the tile state
                             // (XCR0 bits 17, 18); Linux must still grant it to the process (tensor/bf16_amx.h)
  std::string name() const;  // "AuthenticAMD family 25 model 17 (AVX-512, AVX512_BF16)"
};
const CpuInfo& cpu_info();

// ---- the process-wide precision of float32 matrix products ----
enum class Precision { fp32, bf16 };
// Returns the previous setting. Takes effect for the next product; not meant to be switched while products run.
Precision set_matmul_precision(Precision p);
Precision matmul_precision();
const char* precision_name(Precision p);
Precision parse_precision(const std::string& s);  // "fp32" | "bf16", else fails naming the value
// Whether the bf16 products run on bf16 arithmetic here: compiled in, the CPU reports AVX512_BF16 (and AVX-512), and
// DL_BF16 is not "off" in the environment (read once; "on", "auto" or unset leave it to the CPU; anything else fails).
bool bf16_gemm_usable();
// Whether a float32 product runs in bf16 now: the mode is bf16 and bf16_gemm_usable().
bool bf16_products_active();
// One line for a log: which arithmetic the products use under the current mode, and why ("bf16: VDPBF16PS on ..." or
// "bf16 requested, but this CPU has no bf16 arithmetic (no AVX512_BF16): matrix products run in float32").
std::string precision_note();

}  // namespace dl
