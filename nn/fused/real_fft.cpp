// nn/fused/real_fft.cpp - HalfLengthRfft (formulas in real_fft.h).
#include "nn/fused/real_fft.h"

#include <fftw3.h>

#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "tensor/fft.h"  // fftw_planner_mutex
#include "tensor/tensor.h"

namespace dl::nn {

namespace {

// A batched complex plan of length m over R rows, `is` / `os` complex numbers apart, cached per shape under the
// planner lock (executing a plan on other arrays of the same alignment needs no lock). FFTW_ESTIMATE: the plan
// depends on the shape alone, never on timings, so every process computes the same bits. The forward plan keeps its
// input (the caller's rows); the inverse one may overwrite it (spectra the caller gave up).
fftwf_plan complex_plan(int sign, int64_t m, int64_t R, int64_t is, int64_t os) {
  static auto& cache = *new std::map<std::tuple<int, int64_t, int64_t, int64_t, int64_t>, fftwf_plan>;  // never freed
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  fftwf_plan& p = cache[{sign, m, R, is, os}];
  if (p) return p;
  // planning arrays of the execute arrays' alignment (64 bytes), never touched by FFTW_ESTIMATE
  fftwf_complex* in = fftwf_alloc_complex(R * is);
  fftwf_complex* out = fftwf_alloc_complex(R * os);
  const int mi = (int)m;
  const unsigned flags = FFTW_ESTIMATE | (sign == FFTW_FORWARD ? FFTW_PRESERVE_INPUT : FFTW_DESTROY_INPUT);
  p = fftwf_plan_many_dft(1, &mi, (int)R, in, nullptr, 1, (int)is, out, nullptr, 1, (int)os, sign, flags);
  fftwf_free(in);
  fftwf_free(out);
  if (!p) fail("real_fft: FFTW could not make a complex plan of length " + std::to_string(m));
  return p;
}

// Z[0..m) of one row (in place) -> X[0..m]: X[k] = E + t, X[m-k] = conj(E - t), t = W^k O (real_fft.h).
void split_spectrum(float* X, const float* w, int64_t m) {
  const float z0r = X[0], z0i = X[1];
  const int64_t K = (m - 1) / 2;
#pragma omp simd
  for (int64_t k = 1; k <= K; k++) {
    const int64_t j = m - k;
    const float ar = X[2 * k], ai = X[2 * k + 1], br = X[2 * j], bi = -X[2 * j + 1];  // a = Z[k], b = conj Z[m-k]
    const float er = 0.5f * (ar + br), ei = 0.5f * (ai + bi);                            // E = (a + b) / 2
    const float orr = 0.5f * (ai - bi), oi = -0.5f * (ar - br);                          // O = (a - b) / (2i)
    const float wr = w[2 * k], wi = w[2 * k + 1];
    const float tr = wr * orr - wi * oi, ti = wr * oi + wi * orr;  // t = W^k O
    X[2 * k] = er + tr, X[2 * k + 1] = ei + ti;
    X[2 * j] = er - tr, X[2 * j + 1] = ti - ei;
  }
  if (m % 2 == 0) X[m + 1] = -X[m + 1];  // k = m/2: W^k = -i, so X[m/2] = conj Z[m/2]
  X[0] = z0r + z0i, X[1] = 0;            // k = 0: E = Re Z0, O = Im Z0
  X[2 * m] = z0r - z0i, X[2 * m + 1] = 0;
}

// X[0..m] of one row (in place) -> Z[0..m) = 2 (E + i O): Z[k] = s + d, Z[m-k] = conj(s - d) (real_fft.h).
void merge_spectrum(float* X, const float* w, int64_t m) {
  const float x0 = X[0], xm = X[2 * m];  // their imaginary parts are ignored, as c2r does
  const int64_t K = (m - 1) / 2;
#pragma omp simd
  for (int64_t k = 1; k <= K; k++) {
    const int64_t j = m - k;
    const float ar = X[2 * k], ai = X[2 * k + 1], br = X[2 * j], bi = -X[2 * j + 1];  // a = X[k], b = conj X[m-k]
    const float sr = ar + br, si = ai + bi, er = ar - br, ei = ai - bi;
    const float wr = w[2 * k], wi = w[2 * k + 1];
    const float cr = wr * er + wi * ei, ci = wr * ei - wi * er;  // conj(W^k) (a - b)
    const float dr = -ci, di = cr;                                // d = i conj(W^k) (a - b)
    X[2 * k] = sr + dr, X[2 * k + 1] = si + di;
    X[2 * j] = sr - dr, X[2 * j + 1] = di - si;
  }
  if (m % 2 == 0) X[m] = 2 * X[m], X[m + 1] = -2 * X[m + 1];  // k = m/2: Z = 2 conj X[m/2]
  X[0] = x0 + xm, X[1] = x0 - xm;                              // k = 0: W^0 = 1
}

}  // namespace

HalfLengthRfft::HalfLengthRfft(int64_t n) : n_(n), m_(n / 2) {
  if (n < 2 || n % 2) fail("HalfLengthRfft: n must be even and >= 2, found " + std::to_string(n));
  static auto& cache = *new std::map<int64_t, std::vector<cf>>;  // never freed; its nodes never move
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<cf>& w = cache[n];
  if (w.empty()) {
    w.resize(m_ / 2 + 1);
    for (int64_t k = 0; k <= m_ / 2; k++) {
      const double a = -2.0 * M_PI * (double)k / (double)n;
      w[k] = cf((float)std::cos(a), (float)std::sin(a));
    }
  }
  w_ = &w;
}

void HalfLengthRfft::forward(const float* x, int64_t ld, cf* X, int64_t hld, int64_t R) const {
  if (ld % 2) fail("HalfLengthRfft: rows must be an even number of floats apart, found " + std::to_string(ld));
  fftwf_complex* in = reinterpret_cast<fftwf_complex*>(const_cast<float*>(x));  // read only (FFTW_PRESERVE_INPUT)
  fftwf_execute_dft(complex_plan(FFTW_FORWARD, m_, R, ld / 2, hld), in, reinterpret_cast<fftwf_complex*>(X));
  const float* w = reinterpret_cast<const float*>(w_->data());
  for (int64_t r = 0; r < R; r++) split_spectrum(reinterpret_cast<float*>(X + r * hld), w, m_);
}

void HalfLengthRfft::inverse(cf* X, int64_t hld, float* x, int64_t ld, int64_t R) const {
  if (ld % 2) fail("HalfLengthRfft: rows must be an even number of floats apart, found " + std::to_string(ld));
  const float* w = reinterpret_cast<const float*>(w_->data());
  for (int64_t r = 0; r < R; r++) merge_spectrum(reinterpret_cast<float*>(X + r * hld), w, m_);
  fftwf_execute_dft(complex_plan(FFTW_BACKWARD, m_, R, hld, ld / 2), reinterpret_cast<fftwf_complex*>(X),
                    reinterpret_cast<fftwf_complex*>(x));
}

}  // namespace dl::nn
