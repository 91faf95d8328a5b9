// tests/tolerance.h - the one tolerance policy for every numeric test.
//
// A check passes when |actual - expected| <= atol + rtol * |expected| for every element.
// Loosen only with a named constant below (or a local one with a comment saying why).
#pragma once

namespace dl::test {

struct Tol {
  double rtol, atol;
};

// Finite differences in float64 with central differences and eps = 1e-6: truncation error ~eps^2,
// rounding error ~1e-16/eps = 1e-10, so 1e-6 relative is a comfortable bound.
inline constexpr Tol kGradcheck{1e-5, 1e-6};
// Our float32 forward vs PyTorch's float32 forward on the same inputs: both round differently in
// reductions and in transcendental functions, a few ulp on O(1) values.
inline constexpr Tol kFixture{1e-4, 1e-5};
// Ops with long reductions (matmul over K in the hundreds, FFTs, whole models): rounding grows with sqrt(K).
inline constexpr Tol kFixtureLong{1e-3, 1e-4};
// Two algorithms for the same quantity in float64 (e.g. S4 convolution vs recurrence).
inline constexpr Tol kAgreeF64{1e-9, 1e-10};
// Two float32 algorithms that sum in a different order (fused vs composed kernels).
inline constexpr Tol kAgreeF32{1e-4, 1e-5};

}  // namespace dl::test
