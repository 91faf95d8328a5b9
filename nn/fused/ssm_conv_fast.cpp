// nn/fused/ssm_conv_fast.cpp - ssm_conv_fast (nn/fused/ssm_conv_fast.h) on batched FFTs of rows. Its float64
// reference twin, ssm_conv_plain, and the dispatching ssm_conv are in nn/ssm/ssm_ops.cpp.
#include "nn/fused/ssm_conv_fast.h"

#include <fftw3.h>  // fftwf_alloc_*: rows aligned as FFTW's SIMD codelets want them
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <complex>

#include "nn/fused/real_fft.h"
#include "nn/ssm/ssm_ops.h"  // check_conv_args: both twins run the same shape checks

namespace dl::nn {

// ---------------------------------------------------------------------------------------------------
// The fast convolution: float32, kRows channels at a time, batched real FFTs (nn/fused/real_fft.h).
// A block (b, h0 .. h0+R) is gathered from the (B, L, H) layout into R contiguous zero-padded rows (each read
// of u[b, t, h0 : h0+R] is one 64-byte cache line), transformed by one batched plan, multiplied by the kernel
// spectra (computed once per h, not per (b, h)) and transformed back. The FFT length n: fft_size below.
namespace {

constexpr int64_t kRows = 16;    // 16 floats = one cache line of u[b, t, :]
constexpr int64_t kAhead = 16;   // prefetch distance (in t) of the strided gathers and scatters

int64_t smooth_at_least(int64_t m) {  // the smallest 2^a 3^b 5^c 7^d >= m
  for (int64_t n = m;; n++) {
    int64_t r = n;
    for (int64_t p : {2, 3, 5, 7})
      while (r % p == 0) r /= p;
    if (r == 1) return n;
  }
}
// The FFT length: twice the smallest smooth number >= L, an even n >= 2L (no wrap-around) whose half - the length of
// the complex FFT the real one runs on (nn/fused/real_fft.h) - keeps FFTW on its fast codelets.
int64_t fft_size(int64_t L) { return 2 * smooth_at_least(L); }

// Real rows are ld = n + 16 floats apart: with n a power of two, rows exactly n apart would share cache sets
// and the gather (one element into each of 16 rows per t) would evict itself. Spectra are hld = n/2+1 rounded
// up to 8 bins (64 bytes) apart: FFTW's SIMD codelets need every row of a batch aligned.
int64_t row_stride(int64_t n) { return n + 16; }
int64_t bins_stride(int64_t n) { return (n / 2 + 1 + 7) / 8 * 8; }

// Per-thread scratch: kRows real rows x (n reals, ld apart) and their spectra X (n/2+1 bins, hld apart), FFTW-aligned.
struct RowBlock {
  int64_t n, hn, ld, hld;
  float* x;
  cf* X;
  HalfLengthRfft fft;
  explicit RowBlock(int64_t n_)
      : n(n_), hn(n_ / 2 + 1), ld(row_stride(n_)), hld(bins_stride(n_)), x(fftwf_alloc_real(kRows * ld)),
        X(reinterpret_cast<cf*>(fftwf_alloc_complex(kRows * hld))), fft(n_) {}
  ~RowBlock() {
    fftwf_free(x);
    fftwf_free(X);
  }
  RowBlock(const RowBlock&) = delete;
  RowBlock& operator=(const RowBlock&) = delete;
  float* row(int64_t r) { return x + r * ld; }
  cf* bins(int64_t r) { return X + r * hld; }
  // rows -> spectra in X, or in dst (rows hld bins apart, aligned as X); keeps x
  void r2c(int64_t R, cf* dst = nullptr) { fft.forward(x, ld, dst ? dst : X, hld, R); }
  void c2r(int64_t R) { fft.inverse(X, hld, x, ld, R); }  // spectra in X -> rows (unnormalised); destroys X
  // row r <- src[(b L + t) H + h0 + r] for t < L, zero for t in [L, n)
  // (the reads are H floats apart: prefetch a few t ahead, which the hardware does not do across pages)
  void gather(const float* src, int64_t b, int64_t h0, int64_t R, int64_t L, int64_t H) {
    for (int64_t t = 0; t < L; t++) {
      const float* s = src + (b * L + t) * H + h0;
      if (t + kAhead < L) __builtin_prefetch(s + kAhead * H);
      for (int64_t r = 0; r < R; r++) x[r * ld + t] = s[r];
    }
    for (int64_t r = 0; r < R; r++) std::fill(row(r) + L, row(r) + n, 0.0f);
  }
  // dst[(b L + t) H + h0 + r] = row r [t] + D[h0 + r] skip[same index] for t < L (the rows alone without D)
  void scatter(float* dst, const float* skip, const float* D, int64_t b, int64_t h0, int64_t R, int64_t L, int64_t H) {
    for (int64_t t = 0; t < L; t++) {
      const int64_t o = (b * L + t) * H + h0;
      if (t + kAhead < L) __builtin_prefetch(dst + o + kAhead * H, 1), __builtin_prefetch(skip + o + kAhead * H);
      for (int64_t r = 0; r < R; r++) dst[o + r] = x[r * ld + t] + (D ? D[h0 + r] * skip[o + r] : 0.0f);
    }
  }
};

// FK[h] = rfft(Kfull[h], n) / n (the 1/n of every later irfft folded in), (H, n/2+1) bins;
// Kfull = K0 in [0, L), K1 reversed at the end (lag -(i+1) is index n-1-i), zeros between.
std::vector<cf> kernel_spectra(const float* k, int64_t Cc, int64_t H, int64_t L, int64_t n) {
  const int64_t hn = n / 2 + 1, nblk = (H + kRows - 1) / kRows;
  std::vector<cf> FK(H * hn);
#pragma omp parallel if (H * n > 16384)
  {
    RowBlock s(n);
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < nblk; blk++) {
      const int64_t h0 = blk * kRows, R = std::min(kRows, H - h0);
      for (int64_t r = 0; r < R; r++) {
        float* x = s.row(r);
        std::fill(x, x + n, 0.0f);
        std::copy(k + (h0 + r) * L, k + (h0 + r) * L + L, x);
        if (Cc == 2)
          for (int64_t i = 0; i < L; i++) x[n - 1 - i] += k[(H + h0 + r) * L + i];
      }
      s.r2c(R);
      for (int64_t r = 0; r < R; r++)
        for (int64_t m = 0; m < hn; m++) FK[(h0 + r) * hn + m] = s.bins(r)[m] / (float)n;
    }
  }
  return FK;
}

// Spectrum products over hn bins, on the interleaved (re, im) floats so that they vectorise (std::complex's
// operator* checks for NaN/inf and does not).
// out[m] = a[m] F[m], or a[m] conj(F[m]) with conj_f (out may be a)
void mul_bins(cf* outc, const cf* ac, const cf* Fc, int64_t hn, bool conj_f) {
  float* out = reinterpret_cast<float*>(outc);
  const float *A = reinterpret_cast<const float*>(ac), *F = reinterpret_cast<const float*>(Fc);
  const float sgn = conj_f ? -1.0f : 1.0f;
#pragma omp simd
  for (int64_t m = 0; m < hn; m++) {
    const float a = A[2 * m], b = A[2 * m + 1], c = F[2 * m], d = sgn * F[2 * m + 1];
    out[2 * m] = a * c - b * d;
    out[2 * m + 1] = a * d + b * c;
  }
}
// G[m] += conj(U[m]) Y[m]
void add_conj_product(cf* Gc, const cf* Uc, const cf* Yc, int64_t hn) {
  float* G = reinterpret_cast<float*>(Gc);
  const float *U = reinterpret_cast<const float*>(Uc), *Y = reinterpret_cast<const float*>(Yc);
#pragma omp simd
  for (int64_t m = 0; m < hn; m++) {
    const float a = U[2 * m], b = U[2 * m + 1], c = Y[2 * m], d = Y[2 * m + 1];
    G[2 * m] += a * c + b * d;
    G[2 * m + 1] += a * d - b * c;
  }
}

cf* as_bins(const Tensor& t) { return reinterpret_cast<cf*>(t.data<float>()); }

struct FastConvNode : Node {
  // The spectra of u, (B H, bins_stride(n), 2) floats (64-byte aligned as every tensor, so FFTW may write them
  // directly), saved when K or D needs a gradient: the forward computes them anyway and the backward needs
  // them for dK and dD (twice u's memory, one FFT per row less).
  Tensor U;
  Tensor D;            // float32 (H) or undefined
  std::vector<cf> FK;  // kernel spectra / n, (H, n/2+1)
  DType u_dtype, k_dtype, D_dtype;
  int64_t B, L, H, Cc, n;
  const char* name() const override { return "ssm_conv"; }
  std::vector<Tensor> apply(const Tensor& dy_) override;
  void release() override {
    U = D = Tensor();
    FK = {};
  }
};

}  // namespace

Var ssm_conv_fast(const Var& u, const Var& k, const Var& D) {
  Tensor Dt = D.defined() ? D.data() : Tensor();
  check_conv_args(u.data(), k.data(), Dt);
  const int64_t B = u.size(0), L = u.size(1), H = u.size(2), Cc = k.size(0), n = fft_size(L), hn = n / 2 + 1;
  const int64_t nblk = (H + kRows - 1) / kRows, hld = bins_stride(n);
  Tensor uf = u.data().to(DType::f32).contiguous(), kf = k.data().to(DType::f32).contiguous();
  Tensor Df = Dt.defined() ? Dt.to(DType::f32).contiguous() : Tensor();
  std::vector<cf> FK = kernel_spectra(kf.data<float>(), Cc, H, L, n);
  std::vector<Var> ins = {u, k};
  if (D.defined()) ins.push_back(D);
  const bool save_U = k.requires_grad() || (D.defined() && D.requires_grad());
  Tensor U = save_U ? Tensor::empty({B * H, hld, 2}, DType::f32) : Tensor();
  Tensor y = Tensor::empty({B, L, H}, DType::f32);
  const float *pu = uf.data<float>(), *pD = Df.defined() ? Df.data<float>() : nullptr;
  float* py = y.data<float>();
#pragma omp parallel if (B * H * L > 16384)
  {
    RowBlock s(n);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < B * nblk; i++) {
      const int64_t b = i / nblk, h0 = (i % nblk) * kRows, R = std::min(kRows, H - h0);
      cf* Ub = U.defined() ? as_bins(U) + (b * H + h0) * hld : s.X;  // where this block's U goes
      s.gather(pu, b, h0, R, L, H);
      s.r2c(R, Ub);
      for (int64_t r = 0; r < R; r++) mul_bins(s.bins(r), Ub + r * hld, FK.data() + (h0 + r) * hn, hn, false);  // Y = U FK / n
      s.c2r(R);
      s.scatter(py, pu, pD, b, h0, R, L, H);  // y = irfft(Y)[:L] + D u
    }
  }
  Tensor out = y.to(u.dtype());
  if (!any_requires_grad(ins)) return Var(out);
  auto node = std::make_shared<FastConvNode>();
  node->U = U, node->D = Df, node->FK = std::move(FK);
  node->u_dtype = u.dtype(), node->k_dtype = k.dtype(), node->D_dtype = D.defined() ? D.dtype() : DType::f32;
  node->B = B, node->L = L, node->H = H, node->Cc = Cc, node->n = n;
  return record(node, out, ins);
}

// Backward per block: DY = rfft(dy); du = irfft(conj(FK) DY) + D dy. The spectrum of dKfull, sum_b conj(U) DY,
// is summed over b in per-thread accumulators (no races) and transformed back once per h at the end.
// dD needs no pass of its own: D u is the lag-0 tap of the kernel, so dD[h] = dKfull[h, 0] = sum_{b,t} dy u.
std::vector<Tensor> FastConvNode::apply(const Tensor& dy_) {
  const int64_t hn = n / 2 + 1, hld = bins_stride(n), nblk = (H + kRows - 1) / kRows;
  Tensor dyf = dy_.to(DType::f32).contiguous();
  const float *pdy = dyf.data<float>(), *pD = D.defined() ? D.data<float>() : nullptr;
  const bool need_u = needs_grad(0), need_k = needs_grad(1), need_D = D.defined() && needs_grad(2);
  const bool need_corr = need_k || need_D;  // both read dKfull
  if (need_corr && !U.defined()) fail("ssm_conv: backward needs the spectra of u, which the forward did not save");
  Tensor du = need_u ? Tensor::empty({B, L, H}, DType::f32) : Tensor();
  Tensor dk = need_k ? Tensor::empty({Cc, H, L}, DType::f32) : Tensor();
  Tensor dD = need_D ? Tensor::empty({H}, DType::f32) : Tensor();
  float* pdu = need_u ? du.data<float>() : nullptr;
  float* pdk = need_k ? dk.data<float>() : nullptr;
  float* pdD = need_D ? dD.data<float>() : nullptr;
  const bool par = B * H * L > 16384;
  const int nt = par ? omp_get_max_threads() : 1;
  std::vector<cf> G(need_corr ? nt * H * hn : 0);  // per thread: sum_b conj(U) DY, (H, n/2+1)
#pragma omp parallel if (par)
  {
    const int tid = omp_get_thread_num();
    RowBlock s(n);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < B * nblk; i++) {
      const int64_t b = i / nblk, h0 = (i % nblk) * kRows, R = std::min(kRows, H - h0);
      s.gather(pdy, b, h0, R, L, H);
      s.r2c(R);  // DY
      if (need_corr)
        for (int64_t r = 0; r < R; r++)
          add_conj_product(G.data() + (tid * H + h0 + r) * hn, as_bins(U) + (b * H + h0 + r) * hld, s.bins(r), hn);
      if (need_u) {
        for (int64_t r = 0; r < R; r++) mul_bins(s.bins(r), s.bins(r), FK.data() + (h0 + r) * hn, hn, true);  // conj(FK) DY / n
        s.c2r(R);
        s.scatter(pdu, pdy, pD, b, h0, R, L, H);  // du = irfft(conj(FK) DY)[:L] + D dy
      }
    }
    if (need_corr) {  // dKfull[h] = irfft(sum over threads of G[h]) / n; K0 = dKfull[:L], K1[i] = dKfull[n-1-i]
#pragma omp for schedule(static)
      for (int64_t blk = 0; blk < nblk; blk++) {
        const int64_t h0 = blk * kRows, R = std::min(kRows, H - h0);
        for (int64_t r = 0; r < R; r++)
          for (int64_t m = 0; m < hn; m++) {
            cf acc = 0;
            for (int th = 0; th < nt; th++) acc += G[(th * H + h0 + r) * hn + m];
            s.bins(r)[m] = acc / (float)n;
          }
        s.c2r(R);
        for (int64_t r = 0; r < R; r++) {
          const float* g = s.row(r);
          if (pdD) pdD[h0 + r] = g[0];
          if (!pdk) continue;
          std::copy(g, g + L, pdk + (h0 + r) * L);
          if (Cc == 2)
            for (int64_t j = 0; j < L; j++) pdk[(H + h0 + r) * L + j] = g[n - 1 - j];
        }
      }
    }
  }
  std::vector<Tensor> g = {need_u ? du.to(u_dtype) : Tensor(), need_k ? dk.to(k_dtype) : Tensor()};
  if (D.defined()) g.push_back(need_D ? dD.to(D_dtype) : Tensor());
  return g;
}

}  // namespace dl::nn
