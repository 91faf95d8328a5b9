// nn/ssm/s4.cpp - the DPLR kernel (Cauchy + Woodbury + irfft) with its backward, C tilde, naive and recurrent twins.
#include "nn/ssm/s4.h"

#include "tensor/fft.h"

#include <fftw3.h>

#include <cmath>
#include <map>
#include <mutex>

#include "nn/ssm/hippo.h"

namespace dl::nn {

namespace {

// One channel's inputs, unpacked.
struct Chan {
  double dt;
  std::vector<cplx> Lam, w, B, P, Q;  // (N2); w = dt Lambda, Q = conj P
  std::vector<double> ea;             // exp(inv_A_real)
};

struct DplrIn {
  int64_t Cc, H, N2, Lk;
  std::vector<double> ldt, ar, ai;
  std::vector<cplx> B, P, Ct;
  Chan chan(int64_t h) const {
    Chan c;
    c.dt = std::exp(ldt[h]);
    for (int64_t n = 0; n < N2; n++) {
      const int64_t i = h * N2 + n;
      c.ea.push_back(std::exp(ar[i]));
      c.Lam.push_back(cplx(-c.ea.back(), ai[i]));
      c.w.push_back(c.dt * c.Lam.back());
      c.B.push_back(B[i]);
      c.P.push_back(P[i]);
      c.Q.push_back(std::conj(P[i]));
    }
    return c;
  }
};

DplrIn unpack(const Tensor& log_dt, const Tensor& ar, const Tensor& ai, const Tensor& B, const Tensor& P, const Tensor& Ct,
              int64_t Lk) {
  DplrIn d;
  d.Cc = Ct.size(0), d.H = Ct.size(1), d.N2 = Ct.size(2), d.Lk = Lk;
  d.ldt = to_doubles(log_dt), d.ar = to_doubles(ar), d.ai = to_doubles(ai);
  d.B = to_cplx(B), d.P = to_cplx(P), d.Ct = to_cplx(Ct);
  return d;
}

fftw_plan make_plan(int n, bool c2r) {  // called with fftw_planner_mutex() held
  double* r = fftw_alloc_real(n);
  fftw_complex* c = fftw_alloc_complex(n / 2 + 1);
  fftw_plan p = c2r ? fftw_plan_dft_c2r_1d(n, c, r, FFTW_ESTIMATE) : fftw_plan_dft_r2c_1d(n, r, c, FFTW_ESTIMATE);
  fftw_free(r);
  fftw_free(c);
  return p;  // kept for the process (a handful of lengths)
}
fftw_plan plan_for(int n, bool c2r) {
  static auto& cache = *new std::map<std::pair<int, bool>, fftw_plan>;  // never destroyed (see tensor/fft.cpp)
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  auto key = std::make_pair(n, c2r);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  return cache[key] = make_plan(n, c2r);
}

// s_ab at one node for the pairs (Ct_c B), (Ct_c P), (Q B), (Q P): the Cauchy sums of step 4 in s4.h.
struct Sums {
  std::vector<cplx> s00, s01;  // per kernel channel
  cplx s10 = 0, s11 = 0;
};
void cauchy_sums(const Chan& ch, const cplx* Ct_h, int64_t Cc, int64_t HN, int64_t N2, cplx om, Sums& s) {
  const cplx al = 1.0 + om, be = 2.0 * (1.0 - om);
  s.s00.assign(Cc, 0.0), s.s01.assign(Cc, 0.0), s.s10 = s.s11 = 0.0;
  for (int64_t n = 0; n < N2; n++) {
    const cplx inv = 1.0 / (be - al * ch.w[n]), invp = 1.0 / (be - al * std::conj(ch.w[n]));
    auto term = [&](cplx v) { return v * inv + std::conj(v) * invp; };
    for (int64_t c = 0; c < Cc; c++) {
      const cplx ct = Ct_h[c * HN + n];
      s.s00[c] += term(ct * ch.B[n]);
      s.s01[c] += term(ct * ch.P[n]);
    }
    s.s10 += term(ch.Q[n] * ch.B[n]);
    s.s11 += term(ch.Q[n] * ch.P[n]);
  }
  for (auto& v : s.s00) v *= ch.dt;
  for (auto& v : s.s01) v *= ch.dt;
  s.s10 *= ch.dt, s.s11 *= ch.dt;
}

cplx node(int64_t m, int64_t Lk) { return std::polar(1.0, -2.0 * M_PI * (double)m / (double)Lk); }

// K (Cc, H, Lk) f64 on the host: the Cauchy sums per node, the Woodbury correction, FFTW's c2r.
Tensor host_kernel(const DplrIn& in) {
  const int64_t Cc = in.Cc, H = in.H, N2 = in.N2, Lk = in.Lk, M = Lk / 2 + 1;
  std::vector<double> K(Cc * H * Lk);
  fftw_plan c2r = plan_for((int)Lk, true);
#pragma omp parallel if (Cc * H * N2 * Lk > 16384)
  {
    fftw_complex* spec = fftw_alloc_complex(M);
    double* out = fftw_alloc_real(Lk);
    Sums s;
#pragma omp for schedule(static)
    for (int64_t h = 0; h < H; h++) {
      Chan ch = in.chan(h);
      std::vector<cplx> khat(Cc * M);
      for (int64_t m = 0; m < M; m++) {
        const cplx om = node(m, Lk), al = 1.0 + om;
        cauchy_sums(ch, in.Ct.data() + h * N2, Cc, H * N2, N2, om, s);
        for (int64_t c = 0; c < Cc; c++) khat[c * M + m] = 2.0 * (s.s00[c] - al * s.s01[c] * s.s10 / (1.0 + al * s.s11));
      }
      for (int64_t c = 0; c < Cc; c++) {
        for (int64_t m = 0; m < M; m++) spec[m][0] = khat[c * M + m].real(), spec[m][1] = khat[c * M + m].imag();
        fftw_execute_dft_c2r(c2r, spec, out);  // K = irfft(Khat)
        for (int64_t l = 0; l < Lk; l++) K[(c * H + h) * Lk + l] = out[l] / (double)Lk;
      }
    }
    fftw_free(spec);
    fftw_free(out);
  }
  return from_vector(K, {Cc, H, Lk}).to(DType::f64);
}

// The parameters' gradients, filled channel by channel (host vectors), then made tensors where the parameters live.
struct DplrGrads {
  std::vector<double> g_ldt, g_ar, g_ai;
  std::vector<cplx> g_B, g_P, g_Ct;
  explicit DplrGrads(const DplrIn& in)
      : g_ldt(in.H), g_ar(in.H * in.N2), g_ai(in.H * in.N2), g_B(in.H * in.N2), g_P(in.H * in.N2), g_Ct(in.Cc * in.H * in.N2) {}
  std::vector<Tensor> tensors(const Node& n, const DplrIn& in, DType t, Device d) const {
    const int64_t Cc = in.Cc, H = in.H, N2 = in.N2;
    auto put = [&](int i, Tensor x) { return n.needs_grad(i) ? x.to(t).to(d) : Tensor(); };
    return {put(0, from_vector(g_ldt, {H})),        put(1, from_vector(g_ar, {H, N2})),
            put(2, from_vector(g_ai, {H, N2})),     put(3, from_cplx(g_B, {H, N2, 2}, DType::f64)),
            put(4, from_cplx(g_P, {1, H, N2, 2}, DType::f64)), put(5, from_cplx(g_Ct, {Cc, H, N2, 2}, DType::f64))};
  }
};

// The last links of the chain rule for channel h, from the pairs' gradients g_v (gv00, gv01: Cc rows `cs` apart;
// gv10, gv11) and g_w of its N2 modes, and g_dt, the Cauchy sums' share of dt's gradient (see the backward's comment):
// v = a b: g_a = g_v conj(b), g_b = g_v conj(a); Q = conj P; w = dt Lambda; Lambda = -exp(inv_A_real) + i A_imag.
void chain_to_params(const DplrIn& in, const Chan& ch, int64_t h, const cplx* gv00, const cplx* gv01, int64_t cs,
                     const cplx* gv10, const cplx* gv11, const cplx* gw, double g_dt, DplrGrads& G) {
  const int64_t N2 = in.N2, HN = in.H * N2;
  const double dt = ch.dt;
  for (int64_t n = 0; n < N2; n++) {
    const int64_t i = h * N2 + n;
    cplx gb = gv10[n] * std::conj(ch.Q[n]), gp = gv11[n] * std::conj(ch.Q[n]);
    for (int64_t c = 0; c < in.Cc; c++) {
      const cplx ct = in.Ct[c * HN + i];
      G.g_Ct[c * HN + i] = gv00[c * cs + n] * std::conj(ch.B[n]) + gv01[c * cs + n] * std::conj(ch.P[n]);
      gb += gv00[c * cs + n] * std::conj(ct);
      gp += gv01[c * cs + n] * std::conj(ct);
    }
    const cplx gq = gv10[n] * std::conj(ch.B[n]) + gv11[n] * std::conj(ch.P[n]);
    G.g_B[i] = gb;
    G.g_P[i] = gp + std::conj(gq);
    const cplx gl = dt * gw[n];
    g_dt += (std::conj(gw[n]) * ch.Lam[n]).real();
    G.g_ar[i] = gl.real() * -ch.ea[n];
    G.g_ai[i] = gl.imag();
  }
  G.g_ldt[h] = g_dt * dt;
}

// ---- on a device: the (H, N2) setup on the host, the spectrum there (the backend's dplr_spectrum, O(Cc H M N2)),
// the FFTs cuFFT's; back on the host only the (H, N2) gradients for the chain rule ----
struct DplrSetup {
  Tensor w, dt, V;  // f64 on the device: (H, N2, 2), (H), (2 Cc + 2, H, N2, 2) = [Ct B | Ct P | Q B | Q P]
};
DplrSetup device_setup(const DplrIn& in, Device dev) {
  const int64_t Cc = in.Cc, H = in.H, N2 = in.N2, HN = H * N2;
  std::vector<cplx> w(HN), V((2 * Cc + 2) * HN);
  std::vector<double> dt(H);
  for (int64_t h = 0; h < H; h++) {
    Chan ch = in.chan(h);
    dt[h] = ch.dt;
    for (int64_t n = 0; n < N2; n++) {
      const int64_t i = h * N2 + n;
      w[i] = ch.w[n];
      for (int64_t c = 0; c < Cc; c++) {
        V[c * HN + i] = in.Ct[c * HN + i] * ch.B[n];
        V[(Cc + c) * HN + i] = in.Ct[c * HN + i] * ch.P[n];
      }
      V[2 * Cc * HN + i] = ch.Q[n] * ch.B[n];
      V[(2 * Cc + 1) * HN + i] = ch.Q[n] * ch.P[n];
    }
  }
  return {from_cplx(w, {H, N2, 2}, DType::f64).to(dev), from_vector(dt, {H}).to(DType::f64).to(dev),
          from_cplx(V, {2 * Cc + 2, H, N2, 2}, DType::f64).to(dev)};
}

// K (Cc, H, Lk) f64 on the device: irfft of the spectrum (tensor/fft.h's, cuFFT's C2R there).
Tensor device_kernel(const DplrIn& in, Device dev) {
  DplrSetup st = device_setup(in, dev);
  Tensor Khat = Tensor::empty({in.Cc, in.H, in.Lk / 2 + 1, 2}, DType::f64, dev);
  require_backend(dev, "s4_dplr_kernel").dplr_spectrum(st.w, st.dt, st.V, in.Lk, Khat);
  return irfft(Khat, in.Lk);
}

struct DplrNode : Node {
  Tensor log_dt, ar, ai, B, P, Ct;
  int64_t Lk;
  const char* name() const override { return "s4_dplr_kernel"; }
  void release() override { log_dt = ar = ai = B = P = Ct = Tensor(); }
  std::vector<Tensor> apply(const Tensor& dy) override;
  // g_Khat = irfft's adjoint of dK (rfft on the device), the spectrum's backward there, the chain rule here.
  std::vector<Tensor> device_backward(const DplrIn& in, const Tensor& dy, DplrGrads& G) const {
    const Device dev = Ct.device();
    const int64_t Cc = in.Cc, H = in.H, N2 = in.N2, HN = H * N2;
    DplrSetup st = device_setup(in, dev);
    Tensor gK = irfft_backward(dy.to(DType::f64).contiguous(), Lk, Lk / 2 + 1);  // (Cc, H, M, 2)
    Tensor gV = Tensor::empty(st.V.shape(), DType::f64, dev), gw = Tensor::empty(st.w.shape(), DType::f64, dev);
    Tensor gdt = Tensor::empty({H}, DType::f64, dev);
    require_backend(dev, "s4_dplr_kernel backward").dplr_spectrum_backward(st.w, st.dt, st.V, Lk, gK, gV, gw, gdt);
    const std::vector<cplx> hV = to_cplx(gV), hw = to_cplx(gw);
    const std::vector<double> hdt = to_doubles(gdt);
    for (int64_t h = 0; h < H; h++) {
      const cplx* base = hV.data() + h * N2;  // pair k of channel h at base + k HN
      chain_to_params(in, in.chan(h), h, base, base + Cc * HN, HN, base + 2 * Cc * HN, base + (2 * Cc + 1) * HN,
                      hw.data() + h * N2, hdt[h], G);
    }
    return G.tensors(*this, in, Ct.dtype(), dev);
  }
};

}  // namespace

Var s4_dplr_kernel(const Var& log_dt, const Var& inv_A_real, const Var& A_imag, const Var& B, const Var& P, const Var& Ct,
                   int64_t Lk) {
  if (Ct.dim() != 4 || Ct.size(3) != 2) fail("s4_dplr_kernel: C must be (Cc, H, N2, 2), found " + shape_str(Ct.shape()));
  const int64_t Cc = Ct.size(0), H = Ct.size(1), N2 = Ct.size(2);
  if (B.shape() != Shape{H, N2, 2} || P.shape() != Shape{1, H, N2, 2} || log_dt.shape() != Shape{H} ||
      inv_A_real.shape() != Shape{H, N2} || A_imag.shape() != Shape{H, N2})
    fail("s4_dplr_kernel: shapes do not match C " + shape_str(Ct.shape()) + ": log_dt " + shape_str(log_dt.shape()) +
         ", inv_A_real " + shape_str(inv_A_real.shape()) + ", A_imag " + shape_str(A_imag.shape()) + ", B " +
         shape_str(B.shape()) + ", P " + shape_str(P.shape()));
  DplrIn in = unpack(log_dt.data(), inv_A_real.data(), A_imag.data(), B.data(), P.data(), Ct.data(), Lk);
  if (Ct.data().device() != Device::cpu && Cc > 2)
    fail("s4_dplr_kernel: the device kernel takes 1 or 2 kernel channels, found " + std::to_string(Cc));
  Tensor outT = Ct.data().device() != Device::cpu ? device_kernel(in, Ct.data().device()).to(Ct.dtype())
                                                  : host_kernel(in).to(Ct.dtype());
  std::vector<Var> ins = {log_dt, inv_A_real, A_imag, B, P, Ct};
  if (!any_requires_grad(ins)) return Var(outT);
  auto n = std::make_shared<DplrNode>();
  n->log_dt = log_dt.data(), n->ar = inv_A_real.data(), n->ai = A_imag.data(), n->B = B.data(), n->P = P.data(),
  n->Ct = Ct.data();
  n->Lk = Lk;
  return record(n, outT, ins);
}

// Backward, in the order of the forward reversed (g_z = dL/dRe z + i dL/dIm z; holomorphic f: g_z = g_f conj f'):
//   irfft:    g_Khat[m] = (2/Lk) rfft(dK)[m]  (1/Lk and real only at m = 0 and m = Lk/2)
//   Woodbury: Khat = 2 [s00 - al s01 s10 / Dn], Dn = 1 + al s11, al = 1 + z:
//             g_s00 = 2 g, g_s01 = g conj(-2 al s10/Dn), g_s10 = g conj(-2 al s01/Dn), g_s11 = g conj(2 al^2 s01 s10/Dn^2)
//   Cauchy:   s = dt sum_n [v/den + conj(v)/den'], den = 2(1-z) - al w, den' = 2(1-z) - al conj(w):
//             g_v = dt [conj(g_s)/den' + g_s/conj(den)],   g_w = dt [conj(g_s) conj(v) al/den'^2 + g_s conj(v al/den^2)]
//             g_dt += Re(conj(g_s) s)/dt
//   v = a b:  g_a = g_v conj(b), g_b = g_v conj(a);  Q = conj P: g_P += conj(g_Q)
//   w = dt Lambda: g_Lambda = dt g_w, g_dt += Re(conj(g_w) Lambda);  Lambda = -exp(inv_A_real) + i A_imag
std::vector<Tensor> DplrNode::apply(const Tensor& dy) {
  DplrIn in = unpack(log_dt, ar, ai, B, P, Ct, Lk);
  const int64_t Cc = in.Cc, H = in.H, N2 = in.N2, M = Lk / 2 + 1, HN = H * N2;
  DplrGrads G(in);
  if (Ct.device() != Device::cpu) return device_backward(in, dy, G);
  std::vector<double> dK = to_doubles(dy);
  fftw_plan r2c = plan_for((int)Lk, false);
#pragma omp parallel if (Cc * H * N2 * Lk > 16384)
  {
    fftw_complex* spec = fftw_alloc_complex(M);
    double* buf = fftw_alloc_real(Lk);
    Sums s;
#pragma omp for schedule(static)
    for (int64_t h = 0; h < H; h++) {
      Chan ch = in.chan(h);
      std::vector<cplx> gk(Cc * M);
      for (int64_t c = 0; c < Cc; c++) {
        for (int64_t l = 0; l < Lk; l++) buf[l] = dK[(c * H + h) * Lk + l];
        fftw_execute_dft_r2c(r2c, buf, spec);
        for (int64_t m = 0; m < M; m++) {
          const bool edge = m == 0 || (Lk % 2 == 0 && m == Lk / 2);
          gk[c * M + m] = edge ? cplx(spec[m][0] / Lk, 0.0) : cplx(spec[m][0], spec[m][1]) * (2.0 / Lk);
        }
      }
      const double dt = ch.dt;
      double g_dt = 0;
      std::vector<cplx> gv00(Cc * N2, 0.0), gv01(Cc * N2, 0.0), gv10(N2, 0.0), gv11(N2, 0.0), gw(N2, 0.0);
      std::vector<cplx> gs00(Cc), gs01(Cc);
      for (int64_t m = 0; m < M; m++) {
        const cplx om = node(m, Lk), al = 1.0 + om, be = 2.0 * (1.0 - om);
        cauchy_sums(ch, in.Ct.data() + h * N2, Cc, HN, N2, om, s);
        const cplx Dn = 1.0 + al * s.s11;
        cplx gs10 = 0, gs11 = 0;
        for (int64_t c = 0; c < Cc; c++) {
          const cplx g = gk[c * M + m];
          gs00[c] = 2.0 * g;
          gs01[c] = g * std::conj(-2.0 * al * s.s10 / Dn);
          gs10 += g * std::conj(-2.0 * al * s.s01[c] / Dn);
          gs11 += g * std::conj(2.0 * al * al * s.s01[c] * s.s10 / (Dn * Dn));
          g_dt += (std::conj(gs00[c]) * s.s00[c] + std::conj(gs01[c]) * s.s01[c]).real() / dt;
        }
        g_dt += (std::conj(gs10) * s.s10 + std::conj(gs11) * s.s11).real() / dt;
        for (int64_t n = 0; n < N2; n++) {
          const cplx inv = 1.0 / (be - al * ch.w[n]), invp = 1.0 / (be - al * std::conj(ch.w[n]));
          // accumulate g_v and g_w for one pair (v, g_s)
          auto acc = [&](cplx v, cplx g, cplx& gv) {
            gv += dt * (std::conj(g) * invp + g * std::conj(inv));
            gw[n] += dt * (std::conj(g) * std::conj(v) * al * invp * invp + g * std::conj(v * al * inv * inv));
          };
          for (int64_t c = 0; c < Cc; c++) {
            const cplx ct = in.Ct[c * HN + h * N2 + n];
            acc(ct * ch.B[n], gs00[c], gv00[c * N2 + n]);
            acc(ct * ch.P[n], gs01[c], gv01[c * N2 + n]);
          }
          acc(ch.Q[n] * ch.B[n], gs10, gv10[n]);
          acc(ch.Q[n] * ch.P[n], gs11, gv11[n]);
        }
      }
      chain_to_params(in, ch, h, gv00.data(), gv01.data(), N2, gv10.data(), gv11.data(), gw.data(), g_dt, G);
    }
    fftw_free(spec);
    fftw_free(buf);
  }
  return G.tensors(*this, in, Ct.dtype(), Ct.device());
}

// ---------------------------------------------------------------------------------------------------
S4Kernel::S4Kernel(int64_t H_, const S4KernelOptions& o, Generator& g) : H(H_), N2(o.d_state / 2), opt(o) {
  hippo::DPLR d = hippo::legs_dplr(o.d_state);
  std::vector<double> ldt(H), a_re(H * N2), a_im(H * N2);
  std::vector<cplx> Bv(H * N2), Pv(H * N2), Cv(o.channels * H * N2);
  for (int64_t h = 0; h < H; h++) {
    ldt[h] = std::log(o.dt_min) + g.uniform() * (std::log(o.dt_max) - std::log(o.dt_min));
    for (int64_t n = 0; n < N2; n++) {
      a_re[h * N2 + n] = std::log(-d.Lambda[n].real());
      a_im[h * N2 + n] = d.Lambda[n].imag();
      Bv[h * N2 + n] = d.B[n];
      Pv[h * N2 + n] = d.P[n];
    }
  }
  const double s = std::sqrt(0.5);
  for (auto& c : Cv) c = cplx(s * g.normal(), s * g.normal());
  log_dt = register_parameter("log_dt", from_vector(ldt, {H}).to(DType::f32));
  inv_A_real = register_parameter("inv_A_real", from_vector(a_re, {H, N2}).to(DType::f32));
  A_imag = register_parameter("A_imag", from_vector(a_im, {H, N2}).to(DType::f32));
  B = register_parameter("B", from_cplx(Bv, {H, N2, 2}, DType::f32));
  P = register_parameter("P", from_cplx(Pv, {1, H, N2, 2}, DType::f32));
  C = register_parameter("C", from_cplx(Cv, {o.channels, H, N2, 2}, DType::f32));  // C; becomes C tilde at setup
  register_buffer("l_kernel", zeros({}, DType::i64));
}

std::string S4Kernel::extra_repr() const {
  return "H=" + std::to_string(H) + ", N=" + std::to_string(2 * N2) + ", l_kernel=" + std::to_string(l_kernel_);
}

// Dense bilinear system of channel h, from the current parameters (float64).
static hippo::Discrete discrete_of(const S4Kernel& k, int64_t h) {
  auto ldt = to_doubles(k.log_dt.data()), ar = to_doubles(k.inv_A_real.data()), ai = to_doubles(k.A_imag.data());
  auto Bc = to_cplx(k.B.data()), Pc = to_cplx(k.P.data());
  std::vector<cplx> lam(k.N2);
  for (int64_t n = 0; n < k.N2; n++) lam[n] = cplx(-std::exp(ar[h * k.N2 + n]), ai[h * k.N2 + n]);
  return hippo::bilinear_dplr(lam.data(), Pc.data() + h * k.N2, Bc.data() + h * k.N2, k.N2, std::exp(ldt[h]), true);
}

// Ct <- Ct (I - Abar^L) (first setup) or Ct (I + Abar^L) (doubling from L to 2L), on the full conjugate pair state.
void S4Kernel::setup_C(int64_t L, bool double_length) {
  NoGradGuard ng;
  const int64_t Cc = opt.channels, n = 2 * N2;
  std::vector<cplx> Cv = to_cplx(C.data());
#pragma omp parallel for schedule(static) if (H * N2 > 256)
  for (int64_t h = 0; h < H; h++) {
    hippo::Discrete d = discrete_of(*this, h);
    hippo::Mat AL = hippo::power(d.dA, n, L);
    for (int64_t c = 0; c < Cc; c++) {
      std::vector<cplx> cf = hippo::conj_pairs(&Cv[(c * H + h) * N2], N2);
      for (int64_t j = 0; j < N2; j++) {
        cplx prod = 0;  // (cf AL)_j
        for (int64_t i = 0; i < n; i++) prod += cf[i] * AL[i * n + j];
        Cv[(c * H + h) * N2 + j] = double_length ? cf[j] + prod : cf[j] - prod;
      }
    }
  }
  C.mutable_data().copy_(from_cplx(Cv, C.shape(), C.dtype()));
  l_kernel_ = double_length ? 2 * l_kernel_ : L;
  buffer("l_kernel").fill_((double)l_kernel_);
}

void S4Kernel::ensure_length(int64_t L) {
  if (l_kernel_ == 0) l_kernel_ = (int64_t)buffer("l_kernel").item();  // a loaded checkpoint knows its length
  if (l_kernel_ == 0) return setup_C(L, false);
  while (l_kernel_ < L) setup_C(l_kernel_, true);
}

Var S4Kernel::forward(int64_t L) {
  ensure_length(L);
  Var k = s4_dplr_kernel(log_dt, inv_A_real, A_imag, B, P, C, l_kernel_);  // (Cc, H, Lk)
  return L == l_kernel_ ? k : narrow(k, 2, 0, L);
}

// C = Ct (I - Abar^Lk)^{-1}, solved as (I - Abar^Lk)^T C^T = Ct^T.
static std::vector<std::vector<cplx>> recover_C(const S4Kernel& k, const hippo::Discrete& d, int64_t h) {
  const int64_t n = 2 * k.N2;
  hippo::Mat AL = hippo::power(d.dA, n, k.l_kernel()), M(n * n);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) M[j * n + i] = (i == j ? 1.0 : 0.0) - AL[i * n + j];
  auto Cv = to_cplx(k.C.data());
  std::vector<std::vector<cplx>> out;
  for (int64_t c = 0; c < k.opt.channels; c++)
    out.push_back(hippo::solve(M, hippo::conj_pairs(&Cv[(c * k.H + h) * k.N2], k.N2), n, 1));
  return out;
}

Tensor S4Kernel::naive_kernel(int64_t L) const {
  if (l_kernel_ == 0) fail("S4Kernel::naive_kernel: call forward (or ensure_length) first so C tilde is set up");
  const int64_t Cc = opt.channels, n = 2 * N2;
  Tensor K = zeros({Cc, H, L}, DType::f64);
  double* pk = K.data<double>();
  for (int64_t h = 0; h < H; h++) {
    hippo::Discrete d = discrete_of(*this, h);
    auto Cf = recover_C(*this, d, h);
    std::vector<cplx> x = d.dB;  // Abar^l Bbar
    for (int64_t l = 0; l < L; l++) {
      for (int64_t c = 0; c < Cc; c++) {
        cplx acc = 0;
        for (int64_t i = 0; i < n; i++) acc += Cf[c][i] * x[i];
        pk[(c * H + h) * L + l] = acc.real();
      }
      std::vector<cplx> nx(n, 0.0);
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) nx[i] += d.dA[i * n + j] * x[j];
      x = nx;
    }
  }
  return K;
}

S4Kernel::StepParams S4Kernel::step_params() const {
  if (l_kernel_ == 0) fail("S4Kernel::step_params: call forward (or ensure_length) first so C tilde is set up");
  StepParams s;
  for (int64_t h = 0; h < H; h++) {
    hippo::Discrete d = discrete_of(*this, h);
    auto Cf = recover_C(*this, d, h);
    s.dA.push_back(d.dA);
    s.dB.push_back(d.dB);
    s.C.push_back(Cf[0]);
  }
  return s;
}

// The O(N) step. With A = Lambda - p p^* on the conjugate-pair state (p = [P, conj P]), the bilinear step
//   x_k = Abar x_{k-1} + Bbar u_k = (I - dt/2 A)^{-1} [ (I + dt/2 A) x_{k-1} + dt B u_k ]
// needs (I + dt/2 A) x = x + dt/2 (Lambda x - p (p^* x)), O(N), and the inverse of the diagonal-plus-rank-1
// matrix I - dt/2 A = Dg + dt/2 p p^*, Dg = I - dt/2 Lambda, by Sherman-Morrison:
//   (Dg + a p p^*)^{-1} v = Dg^{-1} v - a w (p^* Dg^{-1} v) / (1 + a p^* w),   w = Dg^{-1} p,  a = dt/2.
// Only C (the true C, not C tilde) needs a dense solve, once per channel.
S4Kernel::DPLRStep S4Kernel::dplr_step_params() const {
  if (l_kernel_ == 0) fail("S4Kernel::dplr_step_params: call forward (or ensure_length) first so C tilde is set up");
  auto ldt = to_doubles(log_dt.data()), ar = to_doubles(inv_A_real.data()), ai = to_doubles(A_imag.data());
  auto Bc = to_cplx(B.data()), Pc = to_cplx(P.data());
  DPLRStep s;
  s.dt.resize(H);
  for (int64_t h = 0; h < H; h++) {
    std::vector<cplx> lam(N2);
    for (int64_t n = 0; n < N2; n++) lam[n] = cplx(-std::exp(ar[h * N2 + n]), ai[h * N2 + n]);
    const double dt = std::exp(ldt[h]), a = dt / 2;
    s.dt[h] = dt;
    s.Lambda.push_back(hippo::conj_pairs(lam.data(), N2));
    s.p.push_back(hippo::conj_pairs(Pc.data() + h * N2, N2));
    s.B.push_back(hippo::conj_pairs(Bc.data() + h * N2, N2));
    std::vector<cplx> dinv(2 * N2), w(2 * N2);
    cplx pw = 0;
    for (int64_t i = 0; i < 2 * N2; i++) {
      dinv[i] = 1.0 / (1.0 - a * s.Lambda[h][i]);
      w[i] = dinv[i] * s.p[h][i];
      pw += std::conj(s.p[h][i]) * w[i];
    }
    s.dinv.push_back(dinv);
    s.w.push_back(w);
    s.denom.push_back(1.0 + a * pw);
    s.C.push_back(recover_C(*this, discrete_of(*this, h), h)[0]);
  }
  return s;
}

void S4Kernel::DPLRStep::step(int64_t h, std::vector<cplx>& x, double u) const {
  const int64_t n = (int64_t)x.size();
  const double a = dt[h] / 2;
  const auto &lam = Lambda[h], &ph = p[h], &Bh = B[h], &di = dinv[h], &wh = w[h];
  cplx px = 0;  // p^* x
  for (int64_t i = 0; i < n; i++) px += std::conj(ph[i]) * x[i];
  cplx pv = 0;  // v = (I + a A) x + dt B u, overwriting x with Dg^{-1} v on the way; pv = p^* Dg^{-1} v
  for (int64_t i = 0; i < n; i++) {
    const cplx v = x[i] + a * (lam[i] * x[i] - ph[i] * px) + dt[h] * Bh[i] * u;
    x[i] = di[i] * v;
    pv += std::conj(ph[i]) * x[i];
  }
  const cplx f = a * pv / denom[h];
  for (int64_t i = 0; i < n; i++) x[i] -= f * wh[i];
}

void S4Kernel::StepParams::step(int64_t h, std::vector<cplx>& x, double u) const {
  const int64_t n = (int64_t)x.size();
  std::vector<cplx> nx(n);
  for (int64_t i = 0; i < n; i++) {
    cplx acc = dB[h][i] * u;
    for (int64_t j = 0; j < n; j++) acc += dA[h][i * n + j] * x[j];
    nx[i] = acc;
  }
  x.swap(nx);
}

// y_k = Re(C x_k) + D u_k with x_k = Abar x_{k-1} + Bbar u_k stepped by `s` (either step above), x_0 = 0.
template <class Step> static Tensor run_recurrence(const Tensor& u_, const Tensor& D, const Step& s, int64_t n) {
  const int64_t Bn = u_.size(0), L = u_.size(1), H = u_.size(2);
  Tensor u = u_.to(DType::f64).contiguous(), y = zeros({Bn, L, H}, DType::f64);
  auto Dv = to_doubles(D);
  const double* pu = u.data<double>();
  double* py = y.data<double>();
  for (int64_t b = 0; b < Bn; b++)
    for (int64_t h = 0; h < H; h++) {
      std::vector<cplx> x(n, 0.0);
      for (int64_t t = 0; t < L; t++) {
        const double ut = pu[(b * L + t) * H + h];
        s.step(h, x, ut);
        cplx yc = 0;
        for (int64_t i = 0; i < n; i++) yc += s.C[h][i] * x[i];
        py[(b * L + t) * H + h] = yc.real() + Dv[h] * ut;
      }
    }
  return y;
}

// ---------------------------------------------------------------------------------------------------
S4::S4(int64_t d_model, const S4Options& o, Generator& g) : SSMLayer("s4", d_model, o.bidirectional), opt(o) {
  opt.kernel.channels = opt.bidirectional ? 2 : 1;
  kernel = register_module("kernel", std::make_shared<S4Kernel>(H, opt.kernel, g));
  add_output(opt.dropout, /*glu=*/true, g);
}

std::shared_ptr<S4> S4::from_config(int64_t d_model, const LayerConfig& cfg, Generator& g) {
  check_config_keys(cfg, "s4", config_keys());
  SSMLayerOptions s = read_ssm_options(cfg, "s4", config_keys(), /*conjugate_pairs=*/true);
  S4Options o;
  o.kernel.d_state = s.d_state, o.kernel.dt_min = s.dt_min, o.kernel.dt_max = s.dt_max;
  o.bidirectional = s.bidirectional, o.dropout = s.dropout;
  return std::make_shared<S4>(d_model, o, g);
}

Tensor S4::ssm_recurrent(const Tensor& u) const {
  if (opt.bidirectional) fail("S4::ssm_recurrent: a bidirectional layer has no recurrent mode (it looks ahead)");
  return run_recurrence(u, D.data(), kernel->dplr_step_params(), 2 * kernel->N2);
}

Tensor S4::ssm_recurrent_dense(const Tensor& u) const {
  if (opt.bidirectional) fail("S4::ssm_recurrent_dense: a bidirectional layer has no recurrent mode (it looks ahead)");
  return run_recurrence(u, D.data(), kernel->step_params(), 2 * kernel->N2);
}

StreamState S4::start_stream(int64_t batch) const {
  StreamState s = SequenceLayer::start_stream(batch);  // refuses a bidirectional layer
  const int64_t n = 2 * kernel->N2;
  s.t = {zeros({batch, H, n}, DType::f64), zeros({batch, H, n}, DType::f64)};
  s.host = std::make_shared<const S4Kernel::DPLRStep>(kernel->dplr_step_params());
  return s;
}

Var S4::step(const Var& x, StreamState& s) {
  check_step(x, s, 2);
  if (!s.host) fail("layer s4: the stream state does not come from start_stream");
  const auto& st = *static_cast<const S4Kernel::DPLRStep*>(s.host.get());
  const int64_t Bn = x.size(0), n = s.t[0].size(2);
  Tensor u = x.data().to(Device::cpu).to(DType::f64).contiguous(), y = Tensor::empty({Bn, H}, DType::f64);
  auto Dv = to_doubles(D.data());
  double *xr = s.t[0].data<double>(), *xi = s.t[1].data<double>();
  std::vector<cplx> xs(n);
  for (int64_t b = 0; b < Bn; b++)
    for (int64_t h = 0; h < H; h++) {
      double* re = xr + (b * H + h) * n;
      double* im = xi + (b * H + h) * n;
      for (int64_t i = 0; i < n; i++) xs[i] = {re[i], im[i]};
      const double ut = u.data<double>()[b * H + h];
      st.step(h, xs, ut);  // x <- Abar x + Bbar u, O(n)
      cplx yc = 0;
      for (int64_t i = 0; i < n; i++) yc += st.C[h][i] * xs[i], re[i] = xs[i].real(), im[i] = xs[i].imag();
      y.data<double>()[b * H + h] = yc.real() + Dv[h] * ut;
    }
  s.pos++;
  return finish_step(y, x);
}

}  // namespace dl::nn
