// nn/fused/real_fft.h - real FFTs of even length n = 2m on complex FFTs of length m ("two for one"), for rows of
// float32; what the fast SSM convolution (nn/fused/ssm_conv_fast.cpp) transforms its rows with.
//
// Forward: view the n reals as m complex numbers z[j] = x[2j] + i x[2j+1] and take Z = DFT_m(z). The spectra of the
// even and odd samples are E[k] = (Z[k] + conj Z[m-k]) / 2 and O[k] = (Z[k] - conj Z[m-k]) / (2i) (Z[m] = Z[0]),
// and with W = exp(-2 pi i / n):
//     X[k] = E[k] + W^k O[k],        X[m-k] = conj(E[k] - W^k O[k])        k = 0 .. m/2
// Inverse (unnormalised, as FFTW's c2r: n * irfft(X)): for a Hermitian half spectrum X[0..m],
//     Z[k] = s + d,  Z[m-k] = conj(s - d),  s = X[k] + conj X[m-k],  d = i conj(W^k) (X[k] - conj X[m-k])
// which is 2 (E[k] + i O[k]); the unnormalised inverse DFT_m of Z is then m * 2 z = n z, read back as x[2j], x[2j+1].
// The imaginary parts of X[0] and X[m] are ignored, as c2r ignores them.
//
// Why: the complex plans FFTW_ESTIMATE picks for length m run r2c + c2r of n = 2048 in 27 us per 16 rows against
// 50 us for FFTW's own real plans (2026-12-04, one Zen 4 core; FFTW_MEASURE finds real plans of 35 us, but measured
// plans differ between processes and so would break bit-identical resumes). The plain twin is FFTW's r2c / c2r
// (tensor/fft.h); tests/nn/fused/test_real_fft.cpp compares the two, and test_ssm_fast_conv.cpp the convolution.
#pragma once
#include <complex>
#include <cstdint>
#include <vector>

namespace dl::nn {

using cf = std::complex<float>;  // layout-compatible with fftwf_complex

class HalfLengthRfft {
 public:
  explicit HalfLengthRfft(int64_t n);  // n even and >= 2; fails naming n otherwise
  int64_t n() const { return n_; }
  int64_t bins() const { return m_ + 1; }

  // R rows of n floats, ld floats apart (ld even) -> R rows of n/2 + 1 bins, hld bins apart. x is kept. x and X must
  // be 16-byte aligned like every row (FFTW's SIMD codelets; fftwf_malloc and tensors are 64-byte aligned).
  void forward(const float* x, int64_t ld, cf* X, int64_t hld, int64_t R) const;
  // R rows of n/2 + 1 bins (destroyed) -> R rows of n floats: n * irfft(X), FFTW's unnormalised c2r.
  void inverse(cf* X, int64_t hld, float* x, int64_t ld, int64_t R) const;

 private:
  int64_t n_, m_;
  const std::vector<cf>* w_;  // W^k, k = 0 .. m/2, computed in double once per n and shared (the SSM convolution
                              // makes a HalfLengthRfft per thread per call)
};

}  // namespace dl::nn
