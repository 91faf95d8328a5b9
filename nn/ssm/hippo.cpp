// nn/ssm/hippo.cpp - HiPPO-LegS, its DPLR form, and small dense complex routines (see nn/ssm/hippo.h).
#include "nn/ssm/hippo.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

// LAPACK's Hermitian eigensolver (OpenBLAS ships LAPACK).
extern "C" void zheev_(const char* jobz, const char* uplo, const int* n, std::complex<double>* a, const int* lda, double* w,
                       std::complex<double>* work, const int* lwork, double* rwork, int* info);

namespace dl::nn::hippo {

std::vector<double> legs_A(int64_t N) {
  std::vector<double> A(N * N, 0.0);
  for (int64_t n = 0; n < N; n++)
    for (int64_t k = 0; k <= n; k++) A[n * N + k] = n == k ? -(double)(n + 1) : -std::sqrt(2.0 * n + 1) * std::sqrt(2.0 * k + 1);
  return A;
}

DPLR legs_dplr(int64_t N) {
  if (N < 2 || N % 2) throw std::invalid_argument("hippo::legs_dplr: N must be even and >= 2, found " + std::to_string(N));
  std::vector<double> A = legs_A(N), P(N), B(N);
  for (int64_t n = 0; n < N; n++) P[n] = std::sqrt(n + 0.5), B[n] = std::sqrt(2.0 * n + 1);
  // M = -i S, S = A + P P^T + I/2 (skew-symmetric); column-major for LAPACK (M is Hermitian, so either works)
  std::vector<cplx> M(N * N);
  for (int64_t r = 0; r < N; r++)
    for (int64_t c = 0; c < N; c++) {
      double s = A[r * N + c] + P[r] * P[c] + (r == c ? 0.5 : 0.0);
      M[c * N + r] = cplx(0.0, -s);
    }
  int n = (int)N, lwork = -1, info = 0;
  std::vector<double> mu(N), rwork(std::max<int64_t>(1, 3 * N - 2));
  cplx wq;
  zheev_("V", "U", &n, M.data(), &n, mu.data(), &wq, &lwork, rwork.data(), &info);
  lwork = (int)wq.real();
  std::vector<cplx> work(lwork);
  zheev_("V", "U", &n, M.data(), &n, mu.data(), work.data(), &lwork, rwork.data(), &info);
  if (info != 0) throw std::runtime_error("hippo::legs_dplr: zheev failed, info " + std::to_string(info));
  // eigenvalues ascending: the positive half is the last N2 (mu = 0 does not occur for even N)
  DPLR d;
  for (int64_t j = N / 2; j < N; j++) {
    const cplx* v = &M[j * N];  // eigenvector j (column)
    cplx pt = 0, bt = 0;
    for (int64_t r = 0; r < N; r++) pt += std::conj(v[r]) * P[r], bt += std::conj(v[r]) * B[r];
    d.Lambda.push_back(cplx(-0.5, mu[j]));
    d.P.push_back(pt);
    d.B.push_back(bt);
  }
  return d;
}

Mat eye(int64_t n) {
  Mat m(n * n, 0.0);
  for (int64_t i = 0; i < n; i++) m[i * n + i] = 1.0;
  return m;
}

Mat matmul(const Mat& a, const Mat& b, int64_t n) {
  Mat c(n * n, 0.0);
  for (int64_t i = 0; i < n; i++)
    for (int64_t k = 0; k < n; k++) {
      const cplx aik = a[i * n + k];
      for (int64_t j = 0; j < n; j++) c[i * n + j] += aik * b[k * n + j];
    }
  return c;
}

Mat power(const Mat& a, int64_t n, int64_t p) {
  Mat result = eye(n), base = a;
  while (p > 0) {
    if (p & 1) result = matmul(result, base, n);
    p >>= 1;
    if (p) base = matmul(base, base, n);
  }
  return result;
}

std::vector<cplx> solve(Mat a, std::vector<cplx> b, int64_t n, int64_t m) {
  for (int64_t col = 0; col < n; col++) {
    int64_t piv = col;
    for (int64_t r = col + 1; r < n; r++)
      if (std::abs(a[r * n + col]) > std::abs(a[piv * n + col])) piv = r;
    if (std::abs(a[piv * n + col]) == 0.0) throw std::runtime_error("hippo::solve: singular matrix");
    if (piv != col) {
      for (int64_t j = 0; j < n; j++) std::swap(a[col * n + j], a[piv * n + j]);
      for (int64_t j = 0; j < m; j++) std::swap(b[col * m + j], b[piv * m + j]);
    }
    for (int64_t r = col + 1; r < n; r++) {
      const cplx f = a[r * n + col] / a[col * n + col];
      if (f == 0.0) continue;
      for (int64_t j = col; j < n; j++) a[r * n + j] -= f * a[col * n + j];
      for (int64_t j = 0; j < m; j++) b[r * m + j] -= f * b[col * m + j];
    }
  }
  for (int64_t r = n - 1; r >= 0; r--)
    for (int64_t j = 0; j < m; j++) {
      cplx s = b[r * m + j];
      for (int64_t k = r + 1; k < n; k++) s -= a[r * n + k] * b[k * m + j];
      b[r * m + j] = s / a[r * n + r];
    }
  return b;
}

std::vector<cplx> conj_pairs(const cplx* v, int64_t N2) {
  std::vector<cplx> f(2 * N2);
  for (int64_t i = 0; i < N2; i++) f[i] = v[i], f[N2 + i] = std::conj(v[i]);
  return f;
}

Discrete bilinear_dplr(const cplx* Lambda, const cplx* P, const cplx* B, int64_t N2, double dt, bool low_rank) {
  const int64_t n = 2 * N2;
  std::vector<cplx> Lf = conj_pairs(Lambda, N2), Bf = conj_pairs(B, N2);
  std::vector<cplx> Pf = low_rank ? conj_pairs(P, N2) : std::vector<cplx>(n, 0.0);
  Mat back(n * n), fwd(n * n);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      const cplx a = (i == j ? Lf[i] : 0.0) - Pf[i] * std::conj(Pf[j]);
      back[i * n + j] = (i == j ? 1.0 : 0.0) - dt / 2 * a;
      fwd[i * n + j] = (i == j ? 1.0 : 0.0) + dt / 2 * a;
    }
  Discrete d;
  d.dA = solve(back, fwd, n, n);
  for (auto& b : Bf) b *= dt;
  d.dB = solve(back, Bf, n, 1);
  return d;
}

}  // namespace dl::nn::hippo
