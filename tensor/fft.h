// tensor/fft.h - real FFTs along the last dim on FFTW3 (fftwf_* for f32, fftw_* for f64), no autograd.
//
// Complex numbers are stored as a trailing dim of size 2 (re, im), i.e. torch.view_as_real's layout.
//   rfft(x, n)   x (..., L) -> X (..., n/2+1, 2); x is zero-padded (L < n) or truncated (L > n) to n first.
//                X[k] = sum_{t<n} x[t] exp(-2 pi i k t / n)                   (torch.fft.rfft, norm="backward")
//   irfft(X, n)  X (..., m, 2) -> x (..., n), n defaults to 2 (m - 1); the first n/2+1 bins are used
//                (missing ones are zero), X is read as the half of a Hermitian spectrum, so the imaginary
//                parts of bin 0 and (even n) bin n/2 are ignored:
//                x[t] = (1/n) [Re X0 + sum_{k=1}^{n/2} w_k (Re X_k cos(2 pi k t/n) - Im X_k sin(2 pi k t/n))]
//                with w_k = 2 for 1 <= k <= (n-1)/2 (the bins whose mirror image n-k is not stored) and
//                w_k = 1 for k = 0 and, n even, k = n/2.                  (torch.fft.irfft, norm="backward")
//
// Backward (adjoints of these real-linear maps; derivation):
//   rfft: Re X_k = sum_t x_t cos(2 pi k t/n), Im X_k = -sum_t x_t sin(2 pi k t/n), k = 0..n/2, so
//         dx_t = sum_k [dRe_k cos(2 pi k t/n) - dIm_k sin(2 pi k t/n)].
//         An unnormalised c2r of Y computes Re Y0 + sum_k w_k (Re Y_k cos - Im Y_k sin) (+ the Nyquist term),
//         which is that sum when Y_k = dX_k / w_k: halve bins 1..(n-1)/2, keep DC and Nyquist (their sin
//         terms vanish, matching c2r ignoring their imaginary parts). So
//             dx = n * irfft(dX with bins 1..(n-1)/2 halved, n), then truncated / zero-padded back to L.
//   irfft: dRe_k = (w_k/n) sum_t dx_t cos(2 pi k t/n), dIm_k = -(w_k/n) sum_t dx_t sin(2 pi k t/n), i.e.
//             dX_k = (w_k / n) * rfft(dx, n)_k   (DC and Nyquist imaginary parts come out 0: they were ignored),
//         and bins k >= n/2+1 that the forward dropped get 0.
//
// Plans: cached per (kind, n, rows per call, dtype) behind a mutex (FFTW's planner is not thread safe); the
// new-array execute functions are, so rows are split into chunks run on both cores. FFTW_ESTIMATE
// planning (never touches the arrays); all arrays handed to a plan are 16-byte aligned, as when it was made.
#pragma once
#include <mutex>

#include "tensor/tensor.h"

namespace dl {

// FFTW's planner is global state and not thread safe: every plan made anywhere in the project (here, nn/ssm_ops,
// nn/s4) is made while holding this one lock. Executing existing plans needs no lock.
std::mutex& fftw_planner_mutex();

Tensor rfft(const Tensor& x, int64_t n = -1);
Tensor irfft(const Tensor& X, int64_t n = -1);
Tensor rfft_backward(const Tensor& dX, int64_t n, int64_t L);   // -> dx (..., L)
Tensor irfft_backward(const Tensor& dx, int64_t n, int64_t m);  // -> dX (..., m, 2)
size_t fft_plan_cache_size();

// Causal convolution of rows: y[..., t] = sum_{s <= t} a[..., s] b[..., t - s], t < L, for a, b of one shape (..., L).
// CPU: irfft(rfft(a, 2L) rfft(b, 2L), 2L)[..., :L] (padding to 2L: no wrap-around). A device tensor: the backend's
// fft_conv (cuFFT), the one FFT a device has today. Its adjoint is itself on reversed rows (autograd/fft.h).
Tensor causal_conv(const Tensor& a, const Tensor& b);

}  // namespace dl
