// nn/ssm/ssm_ops.cpp - forward and backward of the fused state-space primitives (math in nn/ssm/ssm_ops.h).
#include "nn/ssm/ssm_ops.h"

#include "nn/fused/ssm_conv_fast.h"

#include "tensor/fft.h"

#include <fftw3.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

namespace dl::nn {

static std::vector<double> to_f64(const Tensor& t) {  // a tensor of either device, as host doubles
  Tensor d = t.to(Device::cpu).to(DType::f64).contiguous();
  return std::vector<double>(d.data<double>(), d.data<double>() + d.numel());
}
static Tensor tensor_from(const std::vector<double>& v, const Shape& s, DType dtype) { return from_vector(v, s).to(dtype); }

// ---------------------------------------------------------------------------------------------------
// The plain convolution (the reference twin): float64, one 1-D transform per (b, h) row read with stride H.
// FFTW plans (double precision), created once per length under a lock; executing a plan on other
// fftw_malloc'd arrays of the same length is thread-safe.
namespace {
struct Plans {
  fftw_plan r2c, c2r;
};
Plans plans_for(int n) {
  static auto& cache = *new std::map<int, Plans>;  // never destroyed, so its plans stay reachable (tensor/fft.cpp)
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  auto it = cache.find(n);
  if (it != cache.end()) return it->second;
  double* r = fftw_alloc_real(n);
  fftw_complex* c = fftw_alloc_complex(n / 2 + 1);
  Plans p{fftw_plan_dft_r2c_1d(n, r, c, FFTW_ESTIMATE), fftw_plan_dft_c2r_1d(n, c, r, FFTW_ESTIMATE)};
  fftw_free(r);
  fftw_free(c);
  cache[n] = p;
  return p;
}

// Per-thread scratch for one length n: a real buffer and two spectra.
struct Scratch {
  int n;
  double* r;
  fftw_complex *a, *b;
  explicit Scratch(int n_)
      : n(n_), r(fftw_alloc_real(n_)), a(fftw_alloc_complex(n_ / 2 + 1)), b(fftw_alloc_complex(n_ / 2 + 1)) {}
  ~Scratch() {
    fftw_free(r);
    fftw_free(a);
    fftw_free(b);
  }
};

// spectrum of x[0..len) zero-padded to n
void rfft_padded(const Plans& p, Scratch& s, const double* x, int64_t stride, int64_t len, fftw_complex* out) {
  for (int64_t i = 0; i < s.n; i++) s.r[i] = i < len ? x[i * stride] : 0.0;
  fftw_execute_dft_r2c(p.r2c, s.r, out);
}

// Assemble the length-n (n = 2L) kernel row of channel h: K0 in [0, L), K1 reversed in [L, 2L).
void assemble_kernel(const double* k, int64_t Cc, int64_t H, int64_t L, int64_t h, double* out, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = 0.0;
  for (int64_t j = 0; j < L; j++) out[j] = k[h * L + j];
  if (Cc == 2)
    for (int64_t j = 0; j < L; j++) out[L + j] += k[(H + h) * L + (L - 1 - j)];
}

struct SsmConvNode : Node {
  Tensor u, k, D;  // float64 contiguous copies
  DType dtype;
  int64_t B, L, H, Cc;
  const char* name() const override { return "ssm_conv"; }
  std::vector<Tensor> apply(const Tensor& dy_) override;
  void release() override { u = k = D = Tensor(); }
};

}  // namespace

void check_conv_args(const Tensor& u, const Tensor& k, const Tensor& D) {
  if (u.dim() != 3) fail("ssm_conv: u must be (B, L, H), found " + shape_str(u.shape()));
  int64_t L = u.size(1), H = u.size(2);
  if (k.dim() != 3 || (k.size(0) != 1 && k.size(0) != 2) || k.size(1) != H || k.size(2) != L)
    fail("ssm_conv: kernel must be (1 or 2, H, L) = (1|2, " + std::to_string(H) + ", " + std::to_string(L) + "), found " +
         shape_str(k.shape()));
  if (D.defined() && (D.dim() != 1 || D.size(0) != H))
    fail("ssm_conv: D must be (" + std::to_string(H) + "), found " + shape_str(D.shape()));
}

Var ssm_conv_plain(const Var& u, const Var& k, const Var& D) {
  Tensor Dt = D.defined() ? D.data() : Tensor();
  check_conv_args(u.data(), k.data(), Dt);
  const int64_t B = u.size(0), L = u.size(1), H = u.size(2), Cc = k.size(0), n = 2 * L;
  Tensor ud = u.data().to(DType::f64).contiguous(), kd = k.data().to(DType::f64).contiguous();
  Tensor Dd = Dt.defined() ? Dt.to(DType::f64).contiguous() : Tensor();
  Tensor y = Tensor::empty({B, L, H}, DType::f64);
  const double *pu = ud.data<double>(), *pk = kd.data<double>(), *pD = Dd.defined() ? Dd.data<double>() : nullptr;
  double* py = y.data<double>();
  Plans p = plans_for((int)n);
#pragma omp parallel if (B * H * L > 16384)
  {
    Scratch s((int)n), sk((int)n);
#pragma omp for schedule(static)
    for (int64_t h = 0; h < H; h++) {
      assemble_kernel(pk, Cc, H, L, h, sk.r, n);
      fftw_execute_dft_r2c(p.r2c, sk.r, sk.a);  // FK
      for (int64_t b = 0; b < B; b++) {
        rfft_padded(p, s, pu + b * L * H + h, H, L, s.a);
        for (int64_t m = 0; m <= n / 2; m++) {  // Y = U * FK
          double re = s.a[m][0] * sk.a[m][0] - s.a[m][1] * sk.a[m][1];
          double im = s.a[m][0] * sk.a[m][1] + s.a[m][1] * sk.a[m][0];
          s.b[m][0] = re, s.b[m][1] = im;
        }
        fftw_execute_dft_c2r(p.c2r, s.b, s.r);
        for (int64_t t = 0; t < L; t++) {
          double v = s.r[t] / (double)n;
          if (pD) v += pD[h] * pu[(b * L + t) * H + h];
          py[(b * L + t) * H + h] = v;
        }
      }
    }
  }
  Tensor out = y.to(u.dtype());
  std::vector<Var> ins = {u, k};
  if (D.defined()) ins.push_back(D);
  if (!any_requires_grad(ins)) return Var(out);
  auto node = std::make_shared<SsmConvNode>();
  node->u = ud, node->k = kd, node->D = Dd, node->dtype = u.dtype();
  node->B = B, node->L = L, node->H = H, node->Cc = Cc;
  return record(node, out, ins);
}

std::vector<Tensor> SsmConvNode::apply(const Tensor& dy_) {
  const int64_t n = 2 * L;
  Tensor dyd = dy_.to(DType::f64).contiguous();
  const double *pdy = dyd.data<double>(), *pu = u.data<double>(), *pk = k.data<double>();
  const double* pD = D.defined() ? D.data<double>() : nullptr;
  bool need_u = needs_grad(0), need_k = needs_grad(1), need_D = D.defined() && needs_grad(2);
  Tensor du = need_u ? zeros({B, L, H}, DType::f64) : Tensor();
  Tensor dk = need_k ? zeros({Cc, H, L}, DType::f64) : Tensor();
  Tensor dD = need_D ? zeros({H}, DType::f64) : Tensor();
  double* pdu = need_u ? du.data<double>() : nullptr;
  double* pdk = need_k ? dk.data<double>() : nullptr;
  double* pdD = need_D ? dD.data<double>() : nullptr;
  Plans p = plans_for((int)n);
#pragma omp parallel if (B * H * L > 16384)
  {
    Scratch s((int)n), sk((int)n), su((int)n);
    std::vector<double> gk(n);
#pragma omp for schedule(static)
    for (int64_t h = 0; h < H; h++) {
      assemble_kernel(pk, Cc, H, L, h, sk.r, n);
      fftw_execute_dft_r2c(p.r2c, sk.r, sk.a);  // FK
      std::fill(gk.begin(), gk.end(), 0.0);
      double dd = 0;
      for (int64_t b = 0; b < B; b++) {
        const double* dy = pdy + b * L * H + h;
        rfft_padded(p, s, dy, H, L, s.a);  // DY
        if (need_u) {                      // du = irfft(conj(FK) DY) + D dy
          for (int64_t m = 0; m <= n / 2; m++) {
            s.b[m][0] = sk.a[m][0] * s.a[m][0] + sk.a[m][1] * s.a[m][1];
            s.b[m][1] = sk.a[m][0] * s.a[m][1] - sk.a[m][1] * s.a[m][0];
          }
          fftw_execute_dft_c2r(p.c2r, s.b, s.r);
          for (int64_t t = 0; t < L; t++) pdu[(b * L + t) * H + h] = s.r[t] / (double)n + (pD ? pD[h] * dy[t * H] : 0.0);
        }
        if (need_k) {  // dKfull += irfft(conj(U) DY)
          rfft_padded(p, su, pu + b * L * H + h, H, L, su.a);
          for (int64_t m = 0; m <= n / 2; m++) {
            su.b[m][0] = su.a[m][0] * s.a[m][0] + su.a[m][1] * s.a[m][1];
            su.b[m][1] = su.a[m][0] * s.a[m][1] - su.a[m][1] * s.a[m][0];
          }
          fftw_execute_dft_c2r(p.c2r, su.b, su.r);
          for (int64_t j = 0; j < n; j++) gk[j] += su.r[j] / (double)n;
        }
        if (need_D)
          for (int64_t t = 0; t < L; t++) dd += dy[t * H] * pu[(b * L + t) * H + h];
      }
      if (need_k) {
        for (int64_t j = 0; j < L; j++) pdk[h * L + j] = gk[j];
        if (Cc == 2)
          for (int64_t i = 0; i < L; i++) pdk[(H + h) * L + i] = gk[2 * L - 1 - i];
      }
      if (need_D) pdD[h] = dd;
    }
  }
  std::vector<Tensor> g = {need_u ? du.to(dtype) : Tensor(), need_k ? dk.to(dtype) : Tensor()};
  if (D.defined()) g.push_back(need_D ? dD.to(dtype) : Tensor());
  return g;
}

// On a device: the composed twin over causal_conv (autograd/fft.h; the backend's cuFFT fft_conv). Per (b, h) row the
// causal part y[t] = sum_{s<=t} k0[s] u[t-s]; a two-sided kernel adds y[t] += sum_{s>t} u[s] k1[s-t-1], which is the
// causal convolution of the reversed row with k1 shifted right by one, reversed back; then D u.
static Var ssm_conv_device(const Var& u, const Var& k, const Var& D) {
  check_conv_args(u.data(), k.data(), D.defined() ? D.data() : Tensor());
  const int64_t B = u.size(0), L = u.size(1), H = u.size(2);
  const Shape rows{B, H, L};
  Var ut = contiguous(transpose(u, 1, 2));                          // (B, H, L)
  Var y = causal_conv(ut, expand(narrow(k, 0, 0, 1), rows));        // (B, H, L)
  if (k.size(0) == 2) {
    Var k1 = pad(narrow(narrow(k, 0, 1, 1), 2, 0, L - 1), {1, 0});  // (1, H, L): k1[j - 1], 0 at j = 0
    y = y + flip(causal_conv(flip(ut, {2}), expand(k1, rows)), {2});
  }
  Var out = transpose(y, 1, 2);  // (B, L, H)
  return D.defined() ? out + u * D : out;
}

Var ssm_conv(const Var& u, const Var& k, const Var& D) {
  if (u.data().device() != Device::cpu) return ssm_conv_device(u, k, D);
  return u.dtype() == DType::f32 ? ssm_conv_fast(u, k, D) : ssm_conv_plain(u, k, D);
}

Tensor ssm_conv_direct(const Tensor& u_, const Tensor& k_, const Tensor& D_) {
  check_conv_args(u_, k_, D_);
  const int64_t B = u_.size(0), L = u_.size(1), H = u_.size(2), Cc = k_.size(0);
  Tensor u = u_.to(DType::f64).contiguous(), k = k_.to(DType::f64).contiguous();
  Tensor y = zeros({B, L, H}, DType::f64);
  const double *pu = u.data<double>(), *pk = k.data<double>();
  double* py = y.data<double>();
  std::vector<double> D = D_.defined() ? to_f64(D_) : std::vector<double>(H, 0.0);
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < H; h++)
      for (int64_t t = 0; t < L; t++) {
        double acc = D[h] * pu[(b * L + t) * H + h];
        for (int64_t s = 0; s <= t; s++) acc += pk[h * L + (t - s)] * pu[(b * L + s) * H + h];
        if (Cc == 2)
          for (int64_t s = t + 1; s < L; s++) acc += pk[(H + h) * L + (s - t - 1)] * pu[(b * L + s) * H + h];
        py[(b * L + t) * H + h] = acc;
      }
  return y;
}

Discretization parse_discretization(const std::string& s, const std::string& layer) {
  if (s == "zoh") return Discretization::zoh;
  if (s == "bilinear") return Discretization::bilinear;
  fail("layer " + layer + ": config field 'disc' must be \"zoh\" or \"bilinear\", found \"" + s + "\"");
}

// ---------------------------------------------------------------------------------------------------
// S4D kernel node.
namespace {

// Everything the forward computes per (h, n) that the backward needs again.
// The kernels' parameters are small ((H, N) and (Cc, H, N) complex numbers): their setup and the chain rule from the
// Vandermonde product's gradients to them run on the host (to_f64 and to_cplx copy device parameters there); only the
// product itself - O(Cc H N L), the step's cost - runs where the parameters are (tensor/vandermonde.h).
Tensor placed(const Tensor& t, Device d) { return t.defined() && d != Device::cpu ? t.to(d) : t; }

// K = scale Re sum_n Ct exp(E l) for host-side Ct (Cc, H, N) and E (H, N), on device d, in dtype t.
Tensor vandermonde_on(Device d, const std::vector<cplx>& Ct, const std::vector<cplx>& E, int64_t Cc, int64_t H, int64_t N,
                      int64_t L, double scale, int64_t chunk, DType t) {
  Tensor ct = placed(from_cplx(Ct, {Cc, H, N, 2}, DType::f64), d), e = placed(from_cplx(E, {H, N, 2}, DType::f64), d);
  return vandermonde(ct, e, L, scale, chunk).to(t);
}

// g_Ct (Cc, H, N) and g_E (H, N) on the host for dK = dy (Cc, H, L) of either device.
void vandermonde_grads(const Tensor& dy, const std::vector<cplx>& Ct, const std::vector<cplx>& E, int64_t Cc, int64_t H,
                       int64_t N, double scale, int64_t chunk, std::vector<cplx>& g_Ct, std::vector<cplx>& g_E) {
  VandermondeGrads g = vandermonde_backward(from_cplx(Ct, {Cc, H, N, 2}, DType::f64), from_cplx(E, {H, N, 2}, DType::f64), dy,
                                            scale, chunk);
  g_Ct = to_cplx(g.Ct), g_E = to_cplx(g.E);
}

struct DiagParams {
  int64_t Cc, H, N, L;
  std::vector<double> dt;           // (H)
  std::vector<cplx> A, B, C, F, E;  // A, B, F, E: (H, N); C: (Cc, H, N); Bbar = B F
  std::vector<double> exp_a_re;     // exp(a_re), (H, N)
};

DiagParams diag_setup(const Tensor& log_dt, const Tensor& a_re, const Tensor& A_imag, const Tensor& Bt, const Tensor& Ct,
                      int64_t L, Discretization disc) {
  DiagParams p;
  p.Cc = Ct.size(0), p.H = Ct.size(1), p.N = Ct.size(2), p.L = L;
  const int64_t H = p.H, N = p.N;
  auto ldt = to_f64(log_dt), ar = to_f64(a_re), ai = to_f64(A_imag);
  p.C = to_cplx(Ct);
  p.B = Bt.defined() ? to_cplx(Bt) : std::vector<cplx>(H * N, cplx(1.0, 0.0));
  p.dt.resize(H);
  p.A.resize(H * N), p.F.resize(H * N), p.E.resize(H * N), p.exp_a_re.resize(H * N);
  for (int64_t h = 0; h < H; h++) {
    p.dt[h] = std::exp(ldt[h]);
    for (int64_t n = 0; n < N; n++) {
      const int64_t i = h * N + n;
      p.exp_a_re[i] = std::exp(ar[i]);
      const cplx A(-p.exp_a_re[i], ai[i]), dtA = p.dt[h] * A;
      p.A[i] = A;
      if (disc == Discretization::zoh) {
        p.E[i] = dtA;
        p.F[i] = (std::exp(dtA) - 1.0) / A;
      } else {
        p.E[i] = std::log((1.0 + dtA / 2.0) / (1.0 - dtA / 2.0));
        p.F[i] = p.dt[h] / (1.0 - dtA / 2.0);
      }
    }
  }
  return p;
}

std::vector<cplx> diag_ct(const DiagParams& p) {  // Ct[c, h, n] = C B F
  std::vector<cplx> Ct(p.Cc * p.H * p.N);
  for (int64_t c = 0; c < p.Cc; c++)
    for (int64_t i = 0; i < p.H * p.N; i++) Ct[c * p.H * p.N + i] = p.C[c * p.H * p.N + i] * p.B[i] * p.F[i];
  return Ct;
}

struct DiagKernelNode : Node {
  Tensor log_dt, a_re, A_imag, B, C;
  int64_t L;
  DiagKernelOptions opt;
  bool has_B;
  const char* name() const override { return "diag_ssm_kernel"; }
  void release() override { log_dt = a_re = A_imag = B = C = Tensor(); }
  std::vector<Tensor> apply(const Tensor& dy) override {
    DiagParams p = diag_setup(log_dt, a_re, A_imag, B, C, L, opt.disc);
    const int64_t Cc = p.Cc, H = p.H, N = p.N;
    std::vector<cplx> Ct = diag_ct(p), g_Ct(Cc * H * N), g_E(H * N);
    vandermonde_grads(dy, Ct, p.E, Cc, H, N, 2.0, opt.chunk, g_Ct, g_E);
    std::vector<double> g_log_dt(H, 0.0), g_a_re(H * N), g_A_imag(H * N);
    std::vector<cplx> g_B(H * N), g_C(Cc * H * N);
    for (int64_t h = 0; h < H; h++) {
      const double dt = p.dt[h];
      double g_dt = 0;
      for (int64_t n = 0; n < N; n++) {
        const int64_t i = h * N + n;
        const cplx A = p.A[i], F = p.F[i], dtA = dt * A;
        cplx g_F = 0, gb = 0;  // Ct = C B F
        for (int64_t c = 0; c < Cc; c++) {
          const cplx g = g_Ct[c * H * N + i], Cv = p.C[c * H * N + i];
          g_C[c * H * N + i] = g * std::conj(p.B[i] * F);
          gb += g * std::conj(Cv * F);
          g_F += g * std::conj(Cv * p.B[i]);
        }
        g_B[i] = gb;
        cplx dF_dA, dF_ddt, dE_dA, dE_ddt;
        if (opt.disc == Discretization::zoh) {  // F = (exp(dtA) - 1)/A, E = dtA
          const cplx ex = std::exp(dtA);
          dF_dA = (dt * ex * A - (ex - 1.0)) / (A * A);
          dF_ddt = ex;
          dE_dA = dt;
          dE_ddt = A;
        } else {  // F = dt/(1 - x), E = log(1 + x) - log(1 - x), x = dtA/2
          const cplx x = dtA / 2.0, om = 1.0 - x;
          dF_dA = dt * dt / (2.0 * om * om);
          dF_ddt = 1.0 / (om * om);
          dE_dA = dt / (1.0 - x * x);
          dE_ddt = A / (1.0 - x * x);
        }
        const cplx g_A = g_F * std::conj(dF_dA) + g_E[i] * std::conj(dE_dA);
        g_dt += (std::conj(g_F) * dF_ddt + std::conj(g_E[i]) * dE_ddt).real();
        g_a_re[i] = g_A.real() * -p.exp_a_re[i];  // A_re = -exp(a_re)
        g_A_imag[i] = g_A.imag();
      }
      g_log_dt[h] = g_dt * dt;
    }
    const DType t = C.dtype();
    const Device d = C.device();  // the gradients go where the parameters are
    std::vector<Tensor> g(has_B ? 5 : 4);
    if (needs_grad(0)) g[0] = placed(tensor_from(g_log_dt, {H}, t), d);
    if (needs_grad(1)) g[1] = placed(tensor_from(g_a_re, {H, N}, t), d);
    if (needs_grad(2)) g[2] = placed(tensor_from(g_A_imag, {H, N}, t), d);
    if (has_B && needs_grad(3)) g[3] = placed(from_cplx(g_B, {H, N, 2}, t), d);
    const size_t ic = has_B ? 4 : 3;
    if (needs_grad(ic)) g[ic] = placed(from_cplx(g_C, {Cc, H, N, 2}, t), d);
    return g;
  }
};

}  // namespace

Var diag_ssm_kernel(const Var& log_dt, const Var& a_re, const Var& A_imag, const Var& B, const Var& C, int64_t L,
                    const DiagKernelOptions& opt) {
  if (C.dim() != 4 || C.size(3) != 2) fail("diag_ssm_kernel: C must be (Cc, H, N2, 2), found " + shape_str(C.shape()));
  const int64_t H = C.size(1), N = C.size(2);
  auto expect = [&](const Var& v, const Shape& s, const char* what) {
    if (v.shape() != s)
      fail(std::string("diag_ssm_kernel: ") + what + " must be " + shape_str(s) + ", found " + shape_str(v.shape()));
  };
  expect(log_dt, {H}, "log_dt");
  expect(a_re, {H, N}, "A real parameter");
  expect(A_imag, {H, N}, "A_imag");
  if (B.defined()) expect(B, {H, N, 2}, "B");
  if (L < 1) fail("diag_ssm_kernel: L must be >= 1, found " + std::to_string(L));
  // the (H, N) setup on the host (from copies when the parameters live on a device); the product where they live
  DiagParams p = diag_setup(log_dt.data(), a_re.data(), A_imag.data(), B.defined() ? B.data() : Tensor(), C.data(), L, opt.disc);
  std::vector<cplx> Ct = diag_ct(p);
  Tensor out = vandermonde_on(C.data().device(), Ct, p.E, p.Cc, H, N, L, 2.0, opt.chunk, C.dtype());
  std::vector<Var> ins = {log_dt, a_re, A_imag};
  if (B.defined()) ins.push_back(B);
  ins.push_back(C);
  if (!any_requires_grad(ins)) return Var(out);
  auto n = std::make_shared<DiagKernelNode>();
  n->log_dt = log_dt.data(), n->a_re = a_re.data(), n->A_imag = A_imag.data();
  n->B = B.defined() ? B.data() : Tensor(), n->C = C.data();
  n->has_B = B.defined(), n->L = L, n->opt = opt;
  return record(n, out, ins);
}

// ---------------------------------------------------------------------------------------------------
// DLR kernel node.
namespace {
struct DlrKernelNode : Node {
  Tensor x, y, W;
  int64_t L, chunk;
  const char* name() const override { return "dlr_kernel"; }
  void release() override { x = y = W = Tensor(); }
  std::vector<Tensor> apply(const Tensor& dy) override {
    const int64_t Cc = W.size(0), H = W.size(1), N = W.size(2);
    auto xs = to_f64(x), ys = to_f64(y);
    std::vector<cplx> Wc = to_cplx(W), E(H * N), g_W(Cc * H * N), g_E(H * N);
    for (int64_t h = 0; h < H; h++)
      for (int64_t n = 0; n < N; n++) E[h * N + n] = cplx(-xs[n] * xs[n], ys[n]);
    vandermonde_grads(dy, Wc, E, Cc, H, N, 1.0, chunk, g_W, g_E);
    std::vector<double> gx(N, 0.0), gy(N, 0.0);
    for (int64_t h = 0; h < H; h++)
      for (int64_t n = 0; n < N; n++) {  // Lambda = -x^2 + i y
        gx[n] += g_E[h * N + n].real() * (-2.0 * xs[n]);
        gy[n] += g_E[h * N + n].imag();
      }
    const DType t = W.dtype();
    const Device d = W.device();  // the gradients go where the parameters are
    return {needs_grad(0) ? placed(tensor_from(gx, {N}, t), d) : Tensor(), needs_grad(1) ? placed(tensor_from(gy, {N}, t), d) : Tensor(),
            needs_grad(2) ? placed(from_cplx(g_W, {Cc, H, N, 2}, t), d) : Tensor()};
  }
};
}  // namespace

Var dlr_kernel(const Var& x, const Var& y, const Var& W, int64_t L, int64_t chunk) {
  if (W.dim() != 4 || W.size(3) != 2) fail("dlr_kernel: W must be (Cc, H, N, 2), found " + shape_str(W.shape()));
  const int64_t Cc = W.size(0), H = W.size(1), N = W.size(2);
  if (x.shape() != Shape{N} || y.shape() != Shape{N})
    fail("dlr_kernel: Lambda parts must be (" + std::to_string(N) + "), found " + shape_str(x.shape()) + " and " +
         shape_str(y.shape()));
  auto xs = to_f64(x.data()), ys = to_f64(y.data());  // (N) setup on the host, the product where W is
  std::vector<cplx> Wc = to_cplx(W.data()), E(H * N);
  for (int64_t h = 0; h < H; h++)
    for (int64_t n = 0; n < N; n++) E[h * N + n] = cplx(-xs[n] * xs[n], ys[n]);
  Tensor out = vandermonde_on(W.data().device(), Wc, E, Cc, H, N, L, 1.0, chunk, W.dtype());
  if (!any_requires_grad({x, y, W})) return Var(out);
  auto n = std::make_shared<DlrKernelNode>();
  n->x = x.data(), n->y = y.data(), n->W = W.data(), n->L = L, n->chunk = chunk;
  return record(n, out, {x, y, W});
}

}  // namespace dl::nn
