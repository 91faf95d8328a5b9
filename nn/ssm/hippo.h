// nn/ssm/hippo.h - HiPPO-LegS and its normal-plus-low-rank (NPLR) diagonalisation, plus the few dense complex
// matrix routines the S4 family needs away from the hot path (C tilde, the naive kernel, recurrent mode).
// Shape letters: N state size (real), N2 = N/2 conjugate pairs.
//
// HiPPO-LegS (Gu et al. 2020; S4 paper eq. 2):
//   A[n, k] = -sqrt(2n+1) sqrt(2k+1) (n > k),  -(n+1) (n == k),  0 (n < k);   B[n] = sqrt(2n+1)
// NPLR (S4, Theorem 1): with P[n] = sqrt(n + 1/2), A + P P^T = -1/2 I + S, S skew-symmetric. Diagonalise S
// (i.e. the Hermitian matrix -i S with LAPACK zheev): S = V diag(i mu) V^*. Then in the basis V
//   A = V (Lambda - Pt Pt^*) V^*,  Lambda = -1/2 + i mu,  Pt = V^* P,  Bt = V^* B.
// The eigenvalues come in conjugate pairs (S is real); we keep the N2 with mu > 0, so the real system of size N
// is the one with modes [Lambda, conj(Lambda)], [Pt, conj(Pt)], [Bt, conj(Bt)].
// S4D-LegS (Gu et al. 2022, S4D) keeps only (Lambda, Bt): the diagonal of the normal part.
#pragma once
#include <complex>
#include <vector>

namespace dl::nn::hippo {

using cplx = std::complex<double>;

std::vector<double> legs_A(int64_t N);  // (N, N) row-major
struct DPLR {
  std::vector<cplx> Lambda, P, B;  // each (N2)
};
DPLR legs_dplr(int64_t N);  // N even

// ---- dense complex (n, n) row-major matrices ----
using Mat = std::vector<cplx>;
Mat eye(int64_t n);
Mat matmul(const Mat& a, const Mat& b, int64_t n);
Mat power(const Mat& a, int64_t n, int64_t p);  // a^p by repeated squaring
// Solve a X = b for X (b: (n, m)), LU with partial pivoting. Throws if singular.
std::vector<cplx> solve(Mat a, std::vector<cplx> b, int64_t n, int64_t m);

// The full real system of a DPLR state matrix: A = diag(Lf) - Pf Pf^*, with Lf = [Lambda, conj Lambda],
// Pf = [P, conj P] (size n = 2 N2); bilinear discretisation
//   dA = (I - dt/2 A)^{-1} (I + dt/2 A),  dB = (I - dt/2 A)^{-1} dt Bf.
struct Discrete {
  Mat dA;
  std::vector<cplx> dB;
};
Discrete bilinear_dplr(const cplx* Lambda, const cplx* P, const cplx* B, int64_t N2, double dt, bool low_rank);
std::vector<cplx> conj_pairs(const cplx* v, int64_t N2);  // [v, conj v]

}  // namespace dl::nn::hippo
