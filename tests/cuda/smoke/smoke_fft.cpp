// tests/cuda/smoke/smoke_fft.cpp - the cuFFT causal convolution: tensor/fft.h's causal_conv of Device::cuda tensors
// (the backend's fft_conv: R2C of both rows zero-padded to 2L, the complex product, C2R, the first L kept), against the
// direct float64 sum y[r, t] = sum_{s <= t} a[r, s] b[r, t - s].
// Lengths: a power of two (1024, n = 2048) and an odd one (777, n = 1554 = 2 3 7 37: cuFFT's mixed-radix path); rows 5.
// Error: scaled_err (smoke.h); a float32 FFT of n points rounds at ~log2(n) eps of the result's size.
#include <random>

#include "tensor/fft.h"
#include "tests/cuda/smoke/smoke.h"

namespace dl::smoke {
namespace {

Outcome fft_conv_item(DType t) {
  Outcome o;
  o.tol = t == DType::f32 ? 2e-5 : 1e-12;
  Generator g(9);
  for (int64_t L : {1024, 777}) {
    const int64_t R = 5;
    Tensor a = randn({R, L}, g, t), b = randn({R, L}, g, t);
    Tensor y = causal_conv(a.to(Device::cuda), b.to(Device::cuda));
    if (y.device() != Device::cuda || y.shape() != Shape{R, L})
      throw std::runtime_error("causal_conv of cuda tensors gave a " + std::string(device_name(y.device())) + " tensor " +
                               shape_str(y.shape()) + ", expected cuda [5, " + std::to_string(L) + "]");
    Tensor ah = a.to(DType::f64), bh = b.to(DType::f64), yh = y.to(Device::cpu).to(DType::f64).contiguous();
    const double *A = ah.data<double>(), *B = bh.data<double>();
    std::vector<double> want(R * L, 0.0), got(yh.data<double>(), yh.data<double>() + R * L);
    for (int64_t r = 0; r < R; r++)
      for (int64_t i = 0; i < L; i++)
        for (int64_t s = 0; s <= i; s++) want[r * L + i] += A[r * L + s] * B[r * L + i - s];
    o.max_err = std::max(o.max_err, scaled_err(got, want));
    o.detail += (o.detail.empty() ? "rows 5, L " : ", ") + std::to_string(L);
  }
  return o;
}

}  // namespace

void run_fft_items(Report& r, const std::string& skip) {
  r.run("cufft.causal_conv.f32", [] { return fft_conv_item(DType::f32); }, skip);
  r.run("cufft.causal_conv.f64", [] { return fft_conv_item(DType::f64); }, skip);
}

}  // namespace dl::smoke
