// tests/nn/fused/test_real_fft.cpp - the real FFT on a half-length complex FFT (nn/fused/real_fft.h) against its plain
// twins: tensor/fft.h's rfft / irfft in float64 (FFTW's own real transforms) as the exact values, and FFTW's float32
// r2c / c2r for how large a float32 error may be. Even and odd m = n/2, n = 2, rows strided as the SSM convolution
// strides them, several rows per call; the imaginary parts of bins 0 and n/2 are ignored as c2r ignores them.
#include <gtest/gtest.h>

#include <fftw3.h>

#include <algorithm>
#include <cmath>

#include "nn/fused/real_fft.h"
#include "op_harness.h"
#include "tensor/fft.h"
#include "tolerance.h"

using namespace dl;
using namespace dl::test;
using dl::nn::cf;
using dl::nn::HalfLengthRfft;

namespace {

const int64_t kSizes[] = {2, 4, 6, 8, 30, 54, 392, 1568, 2048};  // m = 1, 2, 3, 4, 15, 27 (odd), 196, 784, 1024

struct Rows {  // R rows of n floats ld apart and their spectra hld bins apart, FFTW-aligned as the SSM convolution's
  int64_t n, R, ld, hld;
  float* x;
  cf* X;
  Rows(int64_t n_, int64_t R_) : n(n_), R(R_), ld(n_ + 16), hld((n_ / 2 + 1 + 7) / 8 * 8) {
    x = fftwf_alloc_real(R * ld);
    X = reinterpret_cast<cf*>(fftwf_alloc_complex(R * hld));
  }
  ~Rows() {
    fftwf_free(x);
    fftwf_free(X);
  }
};

// largest |a - b| over the rows, and the largest |b|
std::pair<double, double> max_err(const Tensor& a, const Tensor& b) {
  Tensor x = a.to(DType::f64).contiguous(), y = b.to(DType::f64).contiguous();
  double err = 0, big = 0;
  for (int64_t i = 0; i < x.numel(); i++) {
    err = std::max(err, std::abs(x.data<double>()[i] - y.data<double>()[i]));
    big = std::max(big, std::abs(y.data<double>()[i]));
  }
  return {err, big};
}

// Float32 FFT rounding grows with the size of the whole signal, so the tolerance is relative to the largest value.
void expect_close(const Tensor& got, const Tensor& exact, const std::string& what) {
  auto [err, big] = max_err(got, exact);
  EXPECT_LE(err, kAgreeF32.atol * std::max(big, 1.0)) << what << ": largest error " << err << " of values up to " << big;
}

}  // namespace

TEST(HalfLengthRfft, ForwardIsTheRealDft) {
  for (int64_t n : kSizes)
    for (int64_t R : {1, 3, 16}) {
      Rows s(n, R);
      Generator g(n * 10 + R);
      Tensor x = randn({R, n}, g);
      for (int64_t r = 0; r < R; r++) std::copy(x.data<float>() + r * n, x.data<float>() + (r + 1) * n, s.x + r * s.ld);
      HalfLengthRfft(n).forward(s.x, s.ld, s.X, s.hld, R);
      const int64_t hn = n / 2 + 1;
      Tensor got = Tensor::empty({R, hn, 2}, DType::f32);
      for (int64_t r = 0; r < R; r++)
        std::copy(s.X + r * s.hld, s.X + r * s.hld + hn, reinterpret_cast<cf*>(got.data<float>()) + r * hn);
      for (int64_t r = 0; r < R; r++)  // the input rows are kept
        for (int64_t t = 0; t < n; t++) ASSERT_EQ(s.x[r * s.ld + t], x.data<float>()[r * n + t]) << n << " " << r << " " << t;
      expect_close(got, rfft(x.to(DType::f64), n), "n=" + std::to_string(n) + " R=" + std::to_string(R));
    }
}

TEST(HalfLengthRfft, InverseIsFftwsUnnormalisedC2r) {
  for (int64_t n : kSizes)
    for (int64_t R : {1, 3, 16}) {
      Rows s(n, R);
      Generator g(n * 10 + R + 5);
      const int64_t hn = n / 2 + 1;
      Tensor X = randn({R, hn, 2}, g);  // bins 0 and n/2 with imaginary parts: ignored by both
      for (int64_t r = 0; r < R; r++)
        std::copy(reinterpret_cast<cf*>(X.data<float>()) + r * hn, reinterpret_cast<cf*>(X.data<float>()) + (r + 1) * hn,
                  s.X + r * s.hld);
      HalfLengthRfft(n).inverse(s.X, s.hld, s.x, s.ld, R);
      Tensor got = Tensor::empty({R, n}, DType::f32);
      for (int64_t r = 0; r < R; r++)
        for (int64_t t = 0; t < n; t++) got.data<float>()[r * n + t] = s.x[r * s.ld + t] / (float)n;
      expect_close(got, irfft(X.to(DType::f64), n), "n=" + std::to_string(n) + " R=" + std::to_string(R));
    }
}

// No less accurate than FFTW's own float32 real transforms (within a factor of 3 of their error against float64).
TEST(HalfLengthRfft, AsAccurateAsFftwsRealPlans) {
  for (int64_t n : {392, 1568, 2048}) {
    const int64_t R = 16, hn = n / 2 + 1;
    Rows s(n, R);
    Generator g(n);
    Tensor x = randn({R, n}, g);
    for (int64_t r = 0; r < R; r++) std::copy(x.data<float>() + r * n, x.data<float>() + (r + 1) * n, s.x + r * s.ld);
    HalfLengthRfft(n).forward(s.x, s.ld, s.X, s.hld, R);
    Tensor ours = Tensor::empty({R, hn, 2}, DType::f32);
    for (int64_t r = 0; r < R; r++)
      std::copy(s.X + r * s.hld, s.X + r * s.hld + hn, reinterpret_cast<cf*>(ours.data<float>()) + r * hn);
    const Tensor exact = rfft(x.to(DType::f64), n), fftw = rfft(x, n);  // rfft of float32: fftwf's r2c
    const double e_ours = max_err(ours, exact).first, e_fftw = max_err(fftw, exact).first;
    EXPECT_LE(e_ours, 3 * e_fftw + 1e-6) << "n=" << n << ": ours " << e_ours << ", FFTW's r2c " << e_fftw;
  }
}

TEST(HalfLengthRfft, OddLengthIsRefusedNamingIt) {
  EXPECT_NE(error_of([] { HalfLengthRfft(7); }).find("n must be even and >= 2, found 7"), std::string::npos);
}
