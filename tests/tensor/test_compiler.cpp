// tests/tensor/test_compiler.cpp - the build's compiler flags produce correct code for a pattern GCC 12 gets wrong
// with AVX-512 code generation (-march=native on an AVX-512 processor): a 4 x 64-bit constant {x, x, 0, 0} is built
// as the broadcast {x, x, x, x}. Found by apps/explain's test of a 4-tap frequency response; reproduced in a
// 5-line program (g++ 12.2 -O2 -mavx512f). scripts/compiler_probe.py probes 1524 such constants: 36 are wrong with
// -march=native, in the families below (types of 1 to 8 bytes; in the probe's program
// also two int8 vectors built from a run-time value, which this file's smaller functions do not reproduce);
// -fno-tree-slp-vectorize leaves 4 wrong, -mno-avx512vl 36, -mno-avx512f none, clang 14 none. CMakeLists.txt adds
// -mno-avx512f for GCC < 13; this test fails if a flag change lets the miscompilation back in (it is compiled with
// exactly the project's flags).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

// noinline: the values must be read back from memory, not constant-folded from the initializer
template <class T> __attribute__((noinline)) T lanes_2_and_3(const std::vector<T>& v) { return v[2] + 10 * v[3]; }

// The number of lanes of v equal to x (noinline for the same reason).
template <class T> __attribute__((noinline)) int count_of(const std::vector<T>& v, T x) {
  int n = 0;
  for (T e : v) n += e == x;
  return n;
}

}  // namespace

TEST(Compiler, FourLaneConstantsWithTwoEqualLanesAndTwoZeros) {
  EXPECT_EQ(lanes_2_and_3(std::vector<int64_t>{1, 1, 0, 0}), 0);
  EXPECT_EQ(lanes_2_and_3(std::vector<double>{1, 1, 0, 0}), 0.0);
  EXPECT_EQ(lanes_2_and_3(std::vector<int64_t>{7, 7, 0, 0}), 0);
  EXPECT_EQ(lanes_2_and_3(std::vector<int64_t>{1, 2, 3, 4}), 43);
  EXPECT_EQ(lanes_2_and_3(std::vector<int64_t>{1, 1, 1, 0}), 1);
}

// One case of each family scripts/compiler_probe.py found wrong: k equal lanes then zeros, filling half (or 3/4) of
// a 256- or 512-bit register.
TEST(Compiler, EqualLanesThenZerosOfEveryElementWidth) {
  EXPECT_EQ(count_of(std::vector<double>{1, 1, 1, 1, 0, 0, 0, 0}, 1.0), 4);
  EXPECT_EQ(count_of(std::vector<int64_t>{1, 1, 1, 1, 1, 1, 0, 0}, int64_t{1}), 6);
  EXPECT_EQ(count_of(std::vector<float>{1, 1, 1, 1, 0, 0, 0, 0}, 1.0f), 4);
  EXPECT_EQ(count_of(std::vector<float>{1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0}, 1.0f), 8);
  EXPECT_EQ(count_of(std::vector<int32_t>{1, 1, 1, 1, 1, 1, 0, 0}, 1), 6);
  EXPECT_EQ(count_of(std::vector<int16_t>{1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0}, int16_t{1}), 8);
  EXPECT_EQ(count_of(std::vector<int8_t>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                         0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, int8_t{1}), 16);
}
