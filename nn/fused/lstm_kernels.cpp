// nn/fused/lstm_kernels.cpp - the LSTM's hand-written nodes: lstm_cell_fused (one step's pointwise part) and
// lstm_sequence (a whole f32 layer as one node). Their twins: lstm_cell_composed and the per-step graph of
// nn/recurrent/lstm.cpp (LSTMOptions::sequence = false); tests/nn/fused/test_lstm_fast.cpp and
// tests/nn/recurrent/test_lstm.cpp check that they agree. Math: nn/recurrent/lstm.h.
#include "nn/fused/lstm_kernels.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "tensor/bf16.h"
#include "tensor/bf16_gemm.h"
#include "tensor/elementwise.h"
#include "tensor/fast_sgemm.h"
#include "tensor/linalg.h"
#include "tensor/nn_kernels.h"
#include "tensor/spin_barrier.h"

namespace dl::nn {

namespace {

inline double sigm(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// A step's recurrent product C (M, n) (+)= A (M, K) W[:, c0 : c0 + n], W (K, N) row-major. Under Precision::bf16 the
// weight's pair words are packed once per sequence: a step's product is small (64 x 128 x 256 per thread and gate
// here), and converting W again at every step cost about as much as the product. Bits as dl::gemm's bf16 path.
struct RecurrentWeight {
  const float* w;
  int64_t K, N;
  std::optional<Bf16PackedB> packed;
  RecurrentWeight(const float* w_, int64_t K_, int64_t N_, bool aligned) : w(w_), K(K_), N(N_) {
    if (aligned && bf16_products_active()) packed = bf16_pack_b(false, w, N, K, N);  // every c0 a multiple of 16
  }
  // C[:, c0 : c0 + n] (+)= A W[:, c0 : c0 + n] for each c0 (C at column 0 of the (M, N) result): A converted once
  void product(int64_t M, int64_t n, const float* A, int64_t lda, const std::vector<int64_t>& c0s, float beta, float* C,
               int64_t ldc) const {
    if (packed) bf16_gemm_packed(false, M, n, A, lda, *packed, c0s, beta, C, ldc);
    else
      for (int64_t c0 : c0s) gemm<float>(false, false, M, n, K, 1.f, A, lda, w + c0, N, beta, C + c0, ldc);
  }
};

// One thread's columns c0 + [0, n) of a RecurrentWeight for every step of a sequence: its bf16 packing, or in float32
// on the AVX-512 tiles the thread's own copy of those columns in panels (SgemmPanels: W_hh^T's rows are 4 KiB apart,
// a new page at every k of a step's product), or dl::gemm. The same bits on each path as RecurrentWeight::product.
struct ThreadColumns {
  const RecurrentWeight& w;
  std::vector<int64_t> c0s;
  int64_t n;
  std::optional<SgemmPanels> panels;
  ThreadColumns(const RecurrentWeight& w_, std::vector<int64_t> c0s_, int64_t n_) : w(w_), c0s(std::move(c0s_)), n(n_) {
    if (!w.packed && SgemmPanels::applies(n)) panels.emplace(w.w, w.N, w.K, c0s, n);
  }
  // C[:, c0 : c0 + n] (+)= A W[:, c0 : c0 + n] for each c0 (C at column 0 of the (M, N) result)
  void product(int64_t M, const float* A, int64_t lda, float beta, float* C, int64_t ldc) const {
    if (panels) panels->product(M, A, lda, beta, C, ldc);
    else w.product(M, n, A, lda, c0s, beta, C, ldc);
  }
};

struct LstmCellNode : Node {
  Tensor gates, c;  // saved inputs (contiguous); the activations are recomputed in backward
  const char* name() const override { return "lstm_cell_fused"; }
  void release() override { gates = c = Tensor(); }
  std::vector<Tensor> apply(const Tensor& dy_) override {
    const int64_t B = c.size(0), Hd = c.size(1);
    Tensor dy = dy_.contiguous();  // the output's dtype, which c has (lstm_cell_fused converts it)
    Tensor dgates = Tensor::empty({B, 4 * Hd}, gates.dtype(), c.device()), dc = Tensor::empty({B, Hd}, c.dtype(), c.device());
    if (c.device() != Device::cpu) {  // the backend's cell (cuda/ops/lstm.cuh): the same formulas in the tensors' dtype
      require_backend(c.device(), "lstm_cell_fused").lstm_cell_backward(gates, c, dy, dgates, dc);
      return {needs_grad(0) ? dgates : Tensor(), needs_grad(1) ? dc : Tensor()};
    }
    dispatch_float(gates.dtype(), "lstm_cell_fused", [&]<class T>() {
      const T *pg = gates.data<T>(), *pc = c.data<T>(), *pdy = dy.data<T>();
      T *pdg = dgates.data<T>(), *pdc = dc.data<T>();
      for (int64_t b = 0; b < B; b++)
        for (int64_t j = 0; j < Hd; j++) {
          const T* gr = pg + b * 4 * Hd;
          const double i = sigm(gr[j]), f = sigm(gr[Hd + j]), g = std::tanh((double)gr[2 * Hd + j]), o = sigm(gr[3 * Hd + j]);
          const double cp = pc[b * Hd + j], cn = f * cp + i * g, tc = std::tanh(cn);
          const double dh = pdy[(b * 2 + 0) * Hd + j];
          const double dcn = pdy[(b * 2 + 1) * Hd + j] + dh * o * (1 - tc * tc);  // h = o tanh(c)
          T* dg = pdg + b * 4 * Hd;
          dg[j] = (T)(dcn * g * i * (1 - i));           // di = dc g
          dg[Hd + j] = (T)(dcn * cp * f * (1 - f));     // df = dc c_prev
          dg[2 * Hd + j] = (T)(dcn * i * (1 - g * g));  // dg = dc i
          dg[3 * Hd + j] = (T)(dh * tc * o * (1 - o));  // do = dh tanh(c)
          pdc[b * Hd + j] = (T)(dcn * f);               // c = f c_prev + ...
        }
    });
    return {needs_grad(0) ? dgates : Tensor(), needs_grad(1) ? dc : Tensor()};
  }
};

// ---- the whole layer as one node (f32 CPU) ----
// Float32 activations without libm, so the cell loops vectorise (exp_fast: relative error < 2e-7, nn_kernels.h):
//   sigmoid(x) = 1 / (1 + e^-x)          absolute error < 2e-7
//   tanh(x) = 2 sigmoid(2x) - 1          absolute error < 5e-7 (relative error grows as tanh(x) -> 0)
inline float sigmoid_fast(float x) { return 1.0f / (1.0f + exp_fast(-x)); }
inline float tanh_fast(float x) { return 2.0f * sigmoid_fast(2.0f * x) - 1.0f; }

// Hidden units [j0, j1) owned by thread p of nt: whole 16-float vectors, as even as that allows (never empty
// while nt <= Hd / 16, which loop_threads ensures; every thread must reach every barrier).
struct Units {
  int64_t j0, j1;
};
Units units_of(int64_t Hd, int p, int nt) {
  const int64_t v = (Hd + 15) / 16;
  return {std::min(Hd, v * p / nt * 16), std::min(Hd, v * (p + 1) / nt * 16)};
}

// Threads for the time loop. Each step is a (B, Hd) @ (Hd, 4Hd) product and the cell, too small to fork per
// step; instead the threads split the hidden units once and meet at one barrier per step. Small layers run
// on one thread (the barrier would cost more than the work).
int loop_threads(int64_t B, int64_t Hd) {
  if ((double)B * Hd * 4 * Hd < (1 << 20)) return 1;
  return (int)std::clamp<int64_t>(std::min<int64_t>(omp_get_max_threads(), Hd / 16), 1, 64);
}

// Time-major buffers (row t of a (L, B, .) buffer is step t, contiguous (B, .)):
//   x (L, B, I)        the input
//   act (L, B, 4Hd)    the activated gates i, f, g, o of each step
//   h, c (L+1, B, Hd)  row 0 the zero initial state, row t+1 = h_t, c_t
struct LstmSequenceNode : Node {
  Tensor x, w_ih, w_hh, act, h, c;
  int64_t B = 0, L = 0, I = 0, Hd = 0;
  const char* name() const override { return "lstm_sequence"; }
  void release() override { x = w_ih = w_hh = act = h = c = Tensor(); }

  // Backward through time, t = L-1 .. 0 (dy = upstream of h_t, dh_rec = what h_t fed into step t+1):
  //   dh = dy_t + dh_rec,  dh_rec = dG_{t+1} W_hh          (in the forward: gates_{t+1} += h_t W_hh^T)
  //   dc = dc_next + dh o (1 - tanh(c_t)^2),  dc_next <- dc f
  //   dG_t = (dc g i(1-i), dc c_{t-1} f(1-f), dc i (1-g^2), dh tanh(c_t) o(1-o))   (pre-activation gates)
  // and then, over all steps at once (one sgemm each, K = L B):
  //   dW_hh = dG^T H_prev,  dW_ih = dG^T X,  dx = dG W_ih;
  // db_ih = db_hh = the column sums of dG, added up in the loop (each thread owns its units' columns).
  std::vector<Tensor> apply(const Tensor& dy_) override {
    const int64_t G4 = 4 * Hd;
    Tensor dy = dy_.contiguous();  // (B, L, Hd)
    Tensor dG = Tensor::empty({L, B, G4}), dh_rec = zeros({B, Hd}), dc_next = zeros({B, Hd}), db = zeros({G4});
    const float *pdy = dy.data<float>(), *pact = act.data<float>(), *pc = c.data<float>(), *pw = w_hh.data<float>();
    float *pdG = dG.data<float>(), *pdh = dh_rec.data<float>(), *pdc = dc_next.data<float>(), *pdb = db.data<float>();
    const int nt = loop_threads(B, Hd);
    const RecurrentWeight whh(pw, G4, Hd, true);  // W_hh (4Hd, Hd): column c0 = u.j0, a multiple of 16
    SpinBarrier step_done;  // one meeting per step (tensor/spin_barrier.h: a sleeping omp barrier cost more)
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
#pragma omp single
      step_done.set_threads(omp_get_num_threads());
      const Units u = units_of(Hd, omp_get_thread_num(), omp_get_num_threads());
      const ThreadColumns mine(whh, {u.j0}, u.j1 - u.j0);
      for (int64_t t = L - 1; t >= 0; t--) {
        if (t < L - 1)  // dh_rec[:, j0:j1] = dG_{t+1} (B, 4Hd) @ W_hh[:, j0:j1] (4Hd, n)
          mine.product(B, pdG + (t + 1) * B * G4, G4, 0.f, pdh, Hd);
        for (int64_t b = 0; b < B; b++) {
          const float *a = pact + (t * B + b) * G4, *cp = pc + (t * B + b) * Hd, *cn = cp + B * Hd;
          const float* dyr = pdy + (b * L + t) * Hd;
          float *dg = pdG + (t * B + b) * G4, *dhr = pdh + b * Hd, *dcr = pdc + b * Hd;
#pragma omp simd
          for (int64_t j = u.j0; j < u.j1; j++) {
            const float i = a[j], f = a[Hd + j], g = a[2 * Hd + j], o = a[3 * Hd + j], tc = tanh_fast(cn[j]);
            const float dh = dyr[j] + dhr[j];
            const float dc = dcr[j] + dh * o * (1 - tc * tc);
            const float di = dc * g * i * (1 - i), df = dc * cp[j] * f * (1 - f), dgg = dc * i * (1 - g * g),
                        dO = dh * tc * o * (1 - o);
            dg[j] = di, dg[Hd + j] = df, dg[2 * Hd + j] = dgg, dg[3 * Hd + j] = dO;
            pdb[j] += di, pdb[Hd + j] += df, pdb[2 * Hd + j] += dgg, pdb[3 * Hd + j] += dO;
            dcr[j] = dc * f;
          }
        }
        step_done.wait();
      }
    }
    const int64_t LB = L * B;
    Tensor dx, dw_ih, dw_hh, db_ih, db_hh;
    if (needs_grad(0)) {  // dx (L B, I) = dG @ W_ih, back to (B, L, I)
      dx = Tensor::empty({L, B, I});
      gemm<float>(false, false, LB, I, G4, 1.f, pdG, G4, w_ih.data<float>(), I, 0.f, dx.data<float>(), I);
      dx = dx.transpose(0, 1).contiguous();
    }
    if (needs_grad(1)) {
      dw_ih = Tensor::empty({G4, I});
      gemm<float>(true, false, G4, I, LB, 1.f, pdG, G4, x.data<float>(), I, 0.f, dw_ih.data<float>(), I);
    }
    if (needs_grad(2)) {  // h rows 0..L-1 are h_{t-1} for t = 0..L-1
      dw_hh = Tensor::empty({G4, Hd});
      gemm<float>(true, false, G4, Hd, LB, 1.f, pdG, G4, h.data<float>(), Hd, 0.f, dw_hh.data<float>(), Hd);
    }
    if (needs_grad(3)) db_ih = db;
    if (needs_grad(4)) db_hh = needs_grad(3) ? db.clone() : db;
    return {dx, dw_ih, dw_hh, db_ih, db_hh};
  }
};

}  // namespace

Var lstm_sequence(const Var& x, const Var& w_ih, const Var& w_hh, const Var& b_ih, const Var& b_hh) {
  if (x.dim() != 3 || w_hh.dim() != 2)  // before size(), whose error would not name the arguments
    fail("lstm_sequence: expected x (B, L, I) and W_hh (4Hd, Hd), found x " + shape_str(x.shape()) + ", W_hh " +
         shape_str(w_hh.shape()));
  const int64_t B = x.size(0), L = x.size(1), I = x.size(2), Hd = w_hh.size(1), G4 = 4 * Hd;
  if (w_ih.shape() != Shape{G4, I} || w_hh.shape() != Shape{G4, Hd} || b_ih.shape() != Shape{G4} || b_hh.shape() != Shape{G4})
    fail("lstm_sequence: expected x (B, L, I), W_ih (4Hd, I), W_hh (4Hd, Hd), biases (4Hd), found x " + shape_str(x.shape()) +
         ", W_ih " + shape_str(w_ih.shape()) + ", W_hh " + shape_str(w_hh.shape()));
  for (const Var* v : {&x, &w_ih, &w_hh, &b_ih, &b_hh})
    if (v->dtype() != DType::f32 || v->data().device() != Device::cpu)
      fail("lstm_sequence: implemented for f32 CPU tensors (the per-step LSTM path covers the rest)");
  auto n = std::make_shared<LstmSequenceNode>();
  n->B = B, n->L = L, n->I = I, n->Hd = Hd;
  n->x = x.data().transpose(0, 1).contiguous();  // (L, B, I)
  n->w_ih = w_ih.data().contiguous(), n->w_hh = w_hh.data().contiguous();
  n->act = Tensor::empty({L, B, G4}), n->h = Tensor::empty({L + 1, B, Hd}), n->c = Tensor::empty({L + 1, B, Hd});
  float *pa = n->act.data<float>(), *ph = n->h.data<float>(), *pc = n->c.data<float>();
  std::fill(ph, ph + B * Hd, 0.f), std::fill(pc, pc + B * Hd, 0.f);  // h_{-1} = c_{-1} = 0
  // W_hh^T (Hd, 4Hd), once per sequence: each step's product then reads op(B) with its rows contiguous, which the
  // AVX-512 sgemm needs (tensor/fast_sgemm.h; a transposed B would be copied again at every step)
  Tensor w_hhT = n->w_hh.transpose(0, 1).contiguous();
  const float* pw = w_hhT.data<float>();
  const RecurrentWeight whhT(pw, Hd, G4, Hd % 16 == 0);  // W_hh^T (Hd, 4Hd): columns from q Hd + u.j0
  // act = X W_ih^T for all steps: one sgemm of (L B, I) @ (I, 4Hd); the cell adds b = b_ih + b_hh
  gemm<float>(false, true, L * B, G4, I, 1.f, n->x.data<float>(), I, n->w_ih.data<float>(), I, 0.f, pa, G4);
  Tensor bias = add(b_ih.data(), b_hh.data()).contiguous();  // (4Hd)
  const float* pb = bias.data<float>();
  const int nt = loop_threads(B, Hd);
  SpinBarrier step_done;  // one meeting per step (tensor/spin_barrier.h)
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
#pragma omp single
    step_done.set_threads(omp_get_num_threads());
    const Units u = units_of(Hd, omp_get_thread_num(), omp_get_num_threads());
    const ThreadColumns mine(whhT, {u.j0, Hd + u.j0, 2 * Hd + u.j0, 3 * Hd + u.j0}, u.j1 - u.j0);  // the four gates
    for (int64_t t = 0; t < L; t++) {
      float* at = pa + t * B * G4;
      const float* hp = ph + t * B * Hd;  // h_{t-1}
      // gates[:, q Hd + j0 : q Hd + j1] += h_{t-1} @ W_hh^T[:, q Hd + j0 : q Hd + j1] for the four gates q
      mine.product(B, hp, Hd, 1.f, at, G4);
      for (int64_t b = 0; b < B; b++) {
        float* a = at + b * G4;
        const float* cp = pc + (t * B + b) * Hd;
        float *cn = pc + ((t + 1) * B + b) * Hd, *hn = ph + ((t + 1) * B + b) * Hd;
#pragma omp simd
        for (int64_t j = u.j0; j < u.j1; j++) {
          const float i = sigmoid_fast(a[j] + pb[j]), f = sigmoid_fast(a[Hd + j] + pb[Hd + j]),
                      g = tanh_fast(a[2 * Hd + j] + pb[2 * Hd + j]), o = sigmoid_fast(a[3 * Hd + j] + pb[3 * Hd + j]);
          cn[j] = f * cp[j] + i * g;
          hn[j] = o * tanh_fast(cn[j]);
          a[j] = i, a[Hd + j] = f, a[2 * Hd + j] = g, a[3 * Hd + j] = o;
        }
      }
      step_done.wait();
    }
  }
  Tensor y = n->h.narrow(0, 1, L).transpose(0, 1).contiguous();  // (B, L, Hd)
  if (!any_requires_grad({x, w_ih, w_hh, b_ih, b_hh})) return Var(y);
  return record(n, y, {x, w_ih, w_hh, b_ih, b_hh});
}

Var lstm_cell_fused(const Var& gates, const Var& c) {
  if (gates.dim() != 2 || c.dim() != 2 || gates.size(0) != c.size(0) || gates.size(1) != 4 * c.size(1))
    fail("lstm_cell_fused: expected gates (B, 4Hd) and c (B, Hd), found " + shape_str(gates.shape()) + " and " +
         shape_str(c.shape()));
  const int64_t B = c.size(0), Hd = c.size(1);
  Tensor g = gates.data().contiguous(), cc = c.data().to(g.dtype()).contiguous();
  Tensor out = Tensor::empty({B, 2, Hd}, g.dtype(), g.device());
  if (g.device() != Device::cpu) require_backend(g.device(), "lstm_cell_fused").lstm_cell(g, cc, out);
  else dispatch_float(g.dtype(), "lstm_cell_fused", [&]<class T>() {
    const T *pg = g.data<T>(), *pc = cc.data<T>();
    T* po = out.data<T>();
    for (int64_t b = 0; b < B; b++)
      for (int64_t j = 0; j < Hd; j++) {
        const T* gr = pg + b * 4 * Hd;
        const double i = sigm(gr[j]), f = sigm(gr[Hd + j]), gg = std::tanh((double)gr[2 * Hd + j]), o = sigm(gr[3 * Hd + j]);
        const double cn = f * pc[b * Hd + j] + i * gg;
        po[(b * 2 + 0) * Hd + j] = (T)(o * std::tanh(cn));
        po[(b * 2 + 1) * Hd + j] = (T)cn;
      }
  });
  if (!any_requires_grad({gates, c})) return Var(out);
  auto n = std::make_shared<LstmCellNode>();
  n->gates = g, n->c = cc;
  return record(n, out, {gates, c});
}

}  // namespace dl::nn
