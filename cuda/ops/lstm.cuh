// cuda/ops/lstm.cuh - one LSTM step's pointwise part on the device: nn/fused/lstm_kernels.h's lstm_cell_fused, whose
// formulas are nn/recurrent/lstm.h's, one thread per hidden unit of each example (b, j):
//   i = s(g_i), f = s(g_f), g = tanh(g_g), o = s(g_o)    (gates (B, 4 Hd) in the order i, f, g, o; s the sigmoid)
//   c_t = f c + i g,  h_t = o tanh(c_t)                 -> hc (B, 2, Hd) = [h_t, c_t]
// Backward from dhc = [dh, dc_t], the activations recomputed: dc_t' = dc_t + dh o (1 - tanh(c_t)^2),
//   dg_i = dc_t' g i (1 - i), dg_f = dc_t' c f (1 - f), dg_g = dc_t' i (1 - g^2), dg_o = dh tanh(c_t) o (1 - o), dc = dc_t' f.
// The CPU node computes in double and rounds; these compute in T (float32 agrees to float32 tolerance). One launch a
// step instead of the composed cell's ten (three sigmoids, two tanh, three products, a sum, a stack).
#pragma once
#include "cuda/ops/common.cuh"

namespace dl::ops {

template <class T> struct LstmCellF {
  const T *g, *c;
  T* hc;
  int64_t Hd;
  DL_HD void operator()(int64_t k) const {
    const int64_t b = k / Hd, j = k % Hd;
    const T* gr = g + b * 4 * Hd;
    const T i = m_sigmoid(gr[j]), f = m_sigmoid(gr[Hd + j]), gg = m_tanh(gr[2 * Hd + j]), o = m_sigmoid(gr[3 * Hd + j]);
    const T cn = f * c[k] + i * gg;
    hc[(2 * b) * Hd + j] = o * m_tanh(cn);
    hc[(2 * b + 1) * Hd + j] = cn;
  }
};

template <class T> struct LstmCellBackwardF {
  const T *g, *c, *dhc;
  T *dg, *dc;
  int64_t Hd;
  DL_HD void operator()(int64_t k) const {
    const int64_t b = k / Hd, j = k % Hd;
    const T* gr = g + b * 4 * Hd;
    const T i = m_sigmoid(gr[j]), f = m_sigmoid(gr[Hd + j]), gg = m_tanh(gr[2 * Hd + j]), o = m_sigmoid(gr[3 * Hd + j]);
    const T cp = c[k], cn = f * cp + i * gg, tc = m_tanh(cn);
    const T dh = dhc[(2 * b) * Hd + j], dcn = dhc[(2 * b + 1) * Hd + j] + dh * o * ((T)1 - tc * tc);
    T* d = dg + b * 4 * Hd;
    d[j] = dcn * gg * i * ((T)1 - i);
    d[Hd + j] = dcn * cp * f * ((T)1 - f);
    d[2 * Hd + j] = dcn * i * ((T)1 - gg * gg);
    d[3 * Hd + j] = dh * tc * o * ((T)1 - o);
    dc[k] = dcn * f;
  }
};

template <class Exec> void lstm_cell(const Exec& exec, const Tensor& gates, const Tensor& c, const Tensor& hc) {
  const int64_t Hd = c.size(1);
  dispatch_float(c.dtype(), "lstm_cell (cuda)", [&]<class T>() {
    for_n(exec, c.numel(), LstmCellF<T>{dptr<T>(gates), dptr<T>(c), dptr<T>(hc), Hd});
  });
}

template <class Exec>
void lstm_cell_backward(const Exec& exec, const Tensor& gates, const Tensor& c, const Tensor& dhc, const Tensor& dgates,
                        const Tensor& dc) {
  const int64_t Hd = c.size(1);
  dispatch_float(c.dtype(), "lstm_cell backward (cuda)", [&]<class T>() {
    for_n(exec, c.numel(), LstmCellBackwardF<T>{dptr<T>(gates), dptr<T>(c), dptr<T>(dhc), dptr<T>(dgates), dptr<T>(dc), Hd});
  });
}

}  // namespace dl::ops
