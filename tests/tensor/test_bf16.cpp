// tests/tensor/test_bf16.cpp - bfloat16 conversion and the precision switch (tensor/bf16.h).
//   - float -> bf16 against a hand-computed table: exact values, ties to even both ways, just above / below a tie, NaN
//     (quiet and signalling, whose payload must not round into an infinity), infinities, overflow to infinity,
//     signed zeros and denormals (which stay denormals: the conversion is software, the same on every CPU);
//   - the array conversion equals the scalar one on random bit patterns;
//   - DL_BF16=off (the environment, read once per process, so checked in a child process of this executable): the
//     products take the float32 path - bit for bit the fp32 mode's results - and precision_note says so.
#include <gtest/gtest.h>
#include <omp.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bf16_kernels.h"  // PrecisionScope
#include "tensor/bf16.h"
#include "tensor/bf16_amx.h"
#include "tensor/bf16_gemm.h"
#include "tensor/linalg.h"

using namespace dl;

namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Row {
  uint32_t in;
  uint16_t out;
  const char* what;
};
// bf16 keeps the upper 16 bits; the lower 16 decide the rounding (0x8000 is the tie).
const Row kTable[] = {
    {0x3F800000, 0x3F80, "1.0 exact"},
    {0xBFC00000, 0xBFC0, "-1.5 exact"},
    {0x3F808000, 0x3F80, "1 + 2^-8: tie, 0x3F80 even, down"},
    {0x3F818000, 0x3F82, "1 + 3 2^-8: tie, 0x3F81 odd, up"},
    {0x3F808001, 0x3F81, "just above a tie: up"},
    {0x3F807FFF, 0x3F80, "just below a tie: down"},
    {0xBF818000, 0xBF82, "negative tie, odd: away from zero"},
    {0x40490FDB, 0x4049, "pi: down"},
    {0x3DCCCCCD, 0x3DCD, "0.1: up"},
    {0x3F7FFFFF, 0x3F80, "just below 1: carries into the exponent"},
    {0x7F7F7FFF, 0x7F7F, "below half an ulp of the largest bf16: largest finite"},
    {0x7F7FFFFF, 0x7F80, "FLT_MAX: rounds to +inf"},
    {0x7F800000, 0x7F80, "+inf"},
    {0xFF800000, 0xFF80, "-inf"},
    {0x7FC00000, 0x7FC0, "quiet NaN"},
    {0x7F800001, 0x7FC0, "signalling NaN, payload in the low bits: NaN, not inf"},
    {0x7FFFFFFF, 0x7FFF, "NaN with every payload bit: no carry into the sign"},
    {0xFFC00001, 0xFFC0, "negative NaN keeps its sign"},
    {0x00000000, 0x0000, "+0"},
    {0x80000000, 0x8000, "-0"},
    {0x00000001, 0x0000, "smallest float denormal: to +0"},
    {0x00008000, 0x0000, "denormal tie, even: to +0"},
    {0x00018000, 0x0002, "denormal tie, odd: up"},
    {0x00010000, 0x0001, "smallest bf16 denormal, exact"},
    {0x80008001, 0x8001, "negative denormal above a tie: away from zero"},
    {0x007FFFFF, 0x0080, "largest float denormal: to the smallest normal"},
    {0x00800000, 0x0080, "smallest normal, exact"},
};

}  // namespace

TEST(Bf16Convert, HandTable) {
  for (const Row& r : kTable) {
    EXPECT_EQ(float_to_bf16(from_bits(r.in)), r.out) << std::hex << "0x" << r.in << ": " << r.what;
    uint16_t v;
    floats_to_bf16(std::vector<float>{from_bits(r.in)}.data(), &v, 1);
    EXPECT_EQ(v, r.out) << std::hex << "array form, 0x" << r.in << ": " << r.what;
  }
  EXPECT_EQ(bf16_to_float(0x3F80), 1.f);
  EXPECT_EQ(bf16_to_float(0xC049), -3.140625f);
  EXPECT_EQ(round_to_bf16(from_bits(0x3F818000)), from_bits(0x3F820000));
}

TEST(Bf16Convert, ArrayEqualsScalarOnRandomBits) {
  std::mt19937 rng(7);
  std::vector<float> x(4099);  // not a multiple of any vector width
  for (float& v : x) v = from_bits((uint32_t)rng());
  std::vector<uint16_t> y(x.size());
  floats_to_bf16(x.data(), y.data(), (int64_t)x.size());
  for (size_t i = 0; i < x.size(); i++) ASSERT_EQ(y[i], float_to_bf16(x[i])) << "element " << i;
}

TEST(Bf16Precision, ParseAndNames) {
  EXPECT_EQ(parse_precision("bf16"), Precision::bf16);
  EXPECT_EQ(parse_precision("fp32"), Precision::fp32);
  try {
    parse_precision("fp16");
    FAIL() << "fp16 accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("expected fp32 or bf16"), std::string::npos) << e.what();
  }
  const test::PrecisionScope precision(Precision::bf16);
  EXPECT_NE(precision_note().find("bf16"), std::string::npos);
}

namespace {

// C = A B^T (64 x 80 x 96) through dl::gemm in the given mode.
std::vector<float> product(Precision p) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  std::vector<float> A(64 * 96), B(80 * 96), C(64 * 80);
  for (float& v : A) v = U(rng);
  for (float& v : B) v = U(rng);
  const test::PrecisionScope precision(p);
  gemm<float>(false, true, 64, 80, 96, 1.f, A.data(), 96, B.data(), 96, 0.f, C.data(), 80);
  return C;
}

// Runs this test binary again with `env` (NAME=value) and the gtest filter `child`; expects its one test to pass, not
// skip.
void expect_child_passes(const std::string& env, const std::string& child) {
  const std::string cmd = env + " /proc/" + std::to_string(getpid()) + "/exe --gtest_filter=" + child + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string out;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  const int rc = pclose(f);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("[  PASSED  ] 1 test"), std::string::npos) << out;
  EXPECT_EQ(out.find("SKIPPED"), std::string::npos) << out;
}

}  // namespace

// Runs only in the child started by ForcedOffTakesFloat32Path (DL_BF16=off in its environment).
TEST(Bf16ForcedOffChild, Float32PathAndSaysSo) {
  const char* e = std::getenv("DL_BF16");
  if (!e || std::string(e) != "off") GTEST_SKIP() << "runs in the child process of Bf16Precision.ForcedOffTakesFloat32Path";
  EXPECT_FALSE(bf16_gemm_usable());
  EXPECT_EQ(bf16_gemm_path(), "none");
  std::string note;
  {
    const test::PrecisionScope precision(Precision::bf16);
    EXPECT_FALSE(bf16_products_active());
    note = precision_note();
  }
  EXPECT_NE(note.find("DL_BF16=off"), std::string::npos) << note;
  EXPECT_NE(note.find("float32"), std::string::npos) << note;
  EXPECT_EQ(product(Precision::bf16), product(Precision::fp32)) << "DL_BF16=off must give the float32 bits";
}

TEST(Bf16Precision, ForcedOffTakesFloat32Path) { expect_child_passes("DL_BF16=off", "Bf16ForcedOffChild.*"); }

// Runs only in the child started by AmxForcedOffKeepsVdpbf16 (DL_AMX=off in its environment, on a CPU with AMX).
TEST(Bf16AmxOffChild, Vdpbf16PathAndSaysSo) {
  const char* e = std::getenv("DL_AMX");
  if (!e || std::string(e) != "off") GTEST_SKIP() << "runs in the child process of Bf16Precision.AmxForcedOffKeepsVdpbf16";
  EXPECT_FALSE(amx::usable());
  EXPECT_EQ(amx::unusable_reason(), "DL_AMX=off in the environment");
  EXPECT_TRUE(bf16_gemm_usable());
  EXPECT_NE(bf16_gemm_path().find("VDPBF16PS"), std::string::npos) << bf16_gemm_path();
  std::string note;
  {
    const test::PrecisionScope precision(Precision::bf16);
    note = precision_note();
  }
  if (cpu_info().vendor == "GenuineIntel")  // the one Intel measured runs VDPBF16PS at half its FMA rate
    EXPECT_NE(note.find("slower than fp32"), std::string::npos) << note;
}

// Where AMX is usable, DL_AMX=off keeps the bf16 products on the VDPBF16PS tiles, and the note says what that costs.
TEST(Bf16Precision, AmxForcedOffKeepsVdpbf16) {
  if (!amx::usable()) GTEST_SKIP() << "no AMX here: " << amx::unusable_reason();
  EXPECT_NE(bf16_gemm_path().find("AMX"), std::string::npos) << bf16_gemm_path();
  expect_child_passes("DL_AMX=off", "Bf16AmxOffChild.*");
}

// Where the CPU has the feature and the switch is not off, the bf16 mode changes the bits (the operands are rounded).
TEST(Bf16Precision, ModeChangesProductsWhereUsable) {
  if (!bf16_gemm_usable()) GTEST_SKIP() << precision_note();
  EXPECT_NE(product(Precision::bf16), product(Precision::fp32));
}
