// tests/op_harness.h - one harness checks every differentiable primitive two ways:
//   (a) finite differences: float64 inputs, loss L = sum(f(x) * w) for a fixed random w, analytic dL/dx
//       (backward with dy = w) vs central differences, on contiguous inputs AND on non-contiguous
//       (transposed) copies of the same values;
//   (b) recorded PyTorch values: tests/fixtures/ops/<name>.safetensors holds in0..inK, out, gout and
//       grad0..gradK made by the matching entry in tests/fixtures/ops_*.py; f runs on in0..inK (float32),
//       out and every grad (backward with gout) must match within kFixture.
//   (c) the device: the op on Device::cuda against the CPU on the same inputs (float32, float64, and float64
//       transposed views), forward and the gradient of every float input under a random upstream gradient, within
//       the one tolerance policy. The device is the GPU where there is one, or the host twin of the CUDA backend
//       (cuda/twin.h) with DL_TEST_DEVICE=twin (tests/common/test_main.cpp; ctest runs it so); skipped otherwise.
// Adding an op test is one OpCase in a family's list. Integer inputs (indices) are passed through and
// never differentiated.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "tensor/safetensors.h"
#include "tolerance.h"

namespace dl::test {

using InputGen = std::function<Tensor(Generator&)>;  // makes one float64 (or i64) input
using OpFn = std::function<Var(const std::vector<Var>&)>;

struct OpCase {
  std::string name;              // fixture file name and test name
  std::vector<InputGen> inputs;  // for the finite-difference check
  OpFn f;
  Tol fixture_tol = kFixture;
  Tol grad_tol = kGradcheck;
  bool has_fixture = true;  // false only for ops PyTorch lacks; say why where it is set
  bool check_noncontiguous = true;
  double eps = 1e-6;
  std::string no_device{};  // why the op cannot run on a device yet ("" = it can); AgreesOnDevice skips saying so
};

// Input generators
InputGen randn_input(Shape s, double scale = 1.0);
InputGen uniform_input(Shape s, double lo, double hi);    // e.g. positive inputs for log/sqrt
InputGen randint_input(Shape s, int64_t lo, int64_t hi);  // an i64 index tensor
InputGen const_input(Tensor t);

// Element-wise comparison with a readable failure (first bad index, values, max error).
::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected, Tol tol, const std::string& what);

::testing::AssertionResult gradcheck(const OpCase& c, bool noncontiguous);
::testing::AssertionResult fixture_check(const OpCase& c);
// (c): inputs in dtype t (indices stay i64), transposed views when noncontiguous; the device must be present.
::testing::AssertionResult device_check(const OpCase& c, DType t, bool noncontiguous);

std::string fixture_path(const std::string& rel);  // DL_FIXTURE_DIR/rel
bool device_present();                             // Device::cuda has a backend and a device (the GPU or the twin)

inline void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }  // gtest prints the name, not bytes

// The message of the exception f throws, or "" when it throws none (tests of error messages).
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace dl::test

// Instantiate both checks for every case of a family:  DL_OP_TESTS(Elementwise, elementwise_cases())
// clang-format off
#define DL_OP_TESTS(Family, cases_expr)                                                                   \
  class Family##Ops : public ::testing::TestWithParam<dl::test::OpCase> {};                              \
  TEST_P(Family##Ops, FiniteDifferences) { EXPECT_TRUE(dl::test::gradcheck(GetParam(), false)); }         \
  TEST_P(Family##Ops, FiniteDifferencesNonContiguous) {                                                   \
    if (!GetParam().check_noncontiguous) GTEST_SKIP() << "inputs are not views (e.g. 1-D)";               \
    EXPECT_TRUE(dl::test::gradcheck(GetParam(), true));                                                   \
  }                                                                                                       \
  TEST_P(Family##Ops, MatchesPyTorch) {                                                                   \
    if (!GetParam().has_fixture) GTEST_SKIP() << "no PyTorch equivalent";                                 \
    EXPECT_TRUE(dl::test::fixture_check(GetParam()));                                                     \
  }                                                                                                       \
  TEST_P(Family##Ops, AgreesOnDevice) {                                                                   \
    const dl::test::OpCase& c = GetParam();                                                               \
    if (!c.no_device.empty()) GTEST_SKIP() << "not on a device yet: " << c.no_device;                     \
    if (!dl::test::device_present()) GTEST_SKIP() << "no cuda device (DL_TEST_DEVICE=twin: the host twin)"; \
    EXPECT_TRUE(dl::test::device_check(c, dl::DType::f32, false));                                        \
    EXPECT_TRUE(dl::test::device_check(c, dl::DType::f64, false));                                        \
    if (c.check_noncontiguous) EXPECT_TRUE(dl::test::device_check(c, dl::DType::f64, true));              \
  }                                                                                                       \
  INSTANTIATE_TEST_SUITE_P(All, Family##Ops, ::testing::ValuesIn(cases_expr),                            \
                           [](const ::testing::TestParamInfo<dl::test::OpCase>& i) { return i.param.name; })
// clang-format on
