// tests/tensor/test_compiler.cpp - the build's compiler flags produce correct code for a pattern GCC 12 gets wrong
// with AVX-512 code generation (-march=native on an AVX-512 processor): a 4 x 64-bit constant {x, x, 0, 0} is built
// as the broadcast {x, x, x, x}. Found by apps/explain's test of a 4-tap frequency response; reproduced in a
// 5-line program (g++ 12.2 -O2 -mavx512f). CMakeLists.txt adds -mno-avx512f for GCC < 13; this test fails if a
// flag change lets the miscompilation back in (it is compiled with exactly the project's flags).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

// noinline: the values must be read back from memory, not constant-folded from the initializer
template <class T> __attribute__((noinline)) T lanes_2_and_3(const std::vector<T>& v) { return v[2] + 10 * v[3]; }

}  // namespace

TEST(Compiler, FourLaneConstantsWithTwoEqualLanesAndTwoZeros) {
  EXPECT_EQ(lanes_2_and_3(std::vector<int64_t>{1, 1, 0, 0}), 0);
  EXPECT_EQ(lanes_2_and_3(std::vector<double>{1, 1, 0, 0}), 0.0);
  EXPECT_EQ(lanes_2_and_3(std::vector<int64_t>{7, 7, 0, 0}), 0);
  EXPECT_EQ(lanes_2_and_3(std::vector<int64_t>{1, 2, 3, 4}), 43);
}
