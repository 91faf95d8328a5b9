// tensor/bf16.cpp - bf16 conversion, CPUID, the precision switch (see bf16.h).
#include "tensor/bf16.h"

#include <cpuid.h>

#include <atomic>
#include <cstdlib>

#include "tensor/bf16_gemm.h"
#include "tensor/tensor.h"  // fail

namespace dl {

void floats_to_bf16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = float_to_bf16(x[i]);  // integer ops only: the compiler vectorizes it
}

namespace {

uint64_t xgetbv0() {  // which register states the OS saves (XCR0); asm, so no -mxsave is needed
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

CpuInfo read_cpu() {
  CpuInfo c;
  unsigned a, b, cx, d;
  if (!__get_cpuid(0, &a, &b, &cx, &d)) return c;
  const unsigned max_leaf = a;
  char v[13] = {};
  std::memcpy(v, &b, 4), std::memcpy(v + 4, &d, 4), std::memcpy(v + 8, &cx, 4);
  c.vendor = v;
  __get_cpuid(1, &a, &b, &cx, &d);
  const int base = (a >> 8) & 0xF;
  c.family = base == 0xF ? base + (int)((a >> 20) & 0xFF) : base;
  c.model = (int)((a >> 4) & 0xF) | (base == 0xF || base == 6 ? (int)((a >> 12) & 0xF0) : 0);
  const bool osxsave = (cx >> 27) & 1, avx = (cx >> 28) & 1;
  c.fma = (cx >> 12) & 1;
  const uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  const bool os_ymm = (xcr0 & 0x6) == 0x6, os_zmm = (xcr0 & 0xE6) == 0xE6;  // SSE+AVX; + opmask, ZMM_Hi256, Hi16_ZMM
  if (max_leaf < 7) return c;
  __cpuid_count(7, 0, a, b, cx, d);
  c.avx2 = avx && os_ymm && ((b >> 5) & 1);
  c.fma = c.fma && os_ymm;
  c.avx512 = os_zmm && ((b >> 16) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1);  // F, BW, VL
  const bool os_tiles = (xcr0 & (3ull << 17)) == (3ull << 17);                 // XTILECFG, XTILEDATA
  c.amx_bf16 = os_tiles && ((d >> 24) & 1) && ((d >> 22) & 1);                 // AMX-TILE, AMX-BF16
  __cpuid_count(7, 1, a, b, cx, d);
  c.avx512_bf16 = c.avx512 && ((a >> 5) & 1);
  return c;
}

// DL_BF16: "off" forces the float32 path; "on", "auto" or unset leave it to the CPU. Read once.
bool env_allows_bf16() {
  const char* e = std::getenv("DL_BF16");
  if (!e || !*e || std::strcmp(e, "on") == 0 || std::strcmp(e, "auto") == 0) return true;
  if (std::strcmp(e, "off") == 0) return false;
  fail(std::string("DL_BF16='") + e + "': expected off, on or auto");
}

std::atomic<Precision> g_precision{Precision::fp32};

}  // namespace

std::string CpuInfo::name() const {
  std::string s = vendor + " family " + std::to_string(family) + " model " + std::to_string(model) + " (";
  s += avx512 ? "AVX-512" : avx2 ? "AVX2" : "no AVX2";
  if (avx512_bf16) s += ", AVX512_BF16";
  return s + ")";
}

const CpuInfo& cpu_info() {
  static const CpuInfo c = read_cpu();
  return c;
}

Precision set_matmul_precision(Precision p) { return g_precision.exchange(p); }
Precision matmul_precision() { return g_precision.load(std::memory_order_relaxed); }
const char* precision_name(Precision p) { return p == Precision::bf16 ? "bf16" : "fp32"; }
Precision parse_precision(const std::string& s) {
  if (s == "fp32") return Precision::fp32;
  if (s == "bf16") return Precision::bf16;
  fail("precision '" + s + "': expected fp32 or bf16");
}

bool bf16_gemm_usable() {
  static const bool ok = bf16_gemm_compiled() && cpu_info().avx512_bf16 && env_allows_bf16();
  return ok;
}
bool bf16_products_active() { return matmul_precision() == Precision::bf16 && bf16_gemm_usable(); }

std::string precision_note() {
  if (matmul_precision() == Precision::fp32) return "precision fp32: matrix products in float32";
  if (bf16_gemm_usable()) {
    std::string note = "precision bf16: matrix products on " + bf16_gemm_path() + " (" + cpu_info().name() + ")";
    // Intel cores issue VDPBF16PS on one port: half the float32 FMA rate (docs/performance.md, "Intel with AMX").
    if (!bf16_amx_in_use() && cpu_info().vendor == "GenuineIntel")
      note += "; on Intel cores VDPBF16PS runs at half the float32 FMA rate, so bf16 steps are slower than fp32 here";
    return note;
  }
  std::string why = !env_allows_bf16()      ? "DL_BF16=off in the environment"
                    : !bf16_gemm_compiled() ? "this build has no bf16 kernel"
                                            : "this CPU has no bf16 arithmetic (no AVX512_BF16: " + cpu_info().name() + ")";
  return "precision bf16 requested, but " + why + ": matrix products run in float32 instead (not emulated)";
}

}  // namespace dl
