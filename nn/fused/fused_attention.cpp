// nn/fused/fused_attention.cpp - the fused attention primitive (math in the header).
#include "nn/fused/fused_attention.h"

#include <cmath>
#include <limits>
#include <vector>

#include "nn/attention/attention_ops.h"  // prefix_lengths

namespace dl::nn {

namespace {

constexpr int64_t kBlock = 64;  // keys per block: a block of k and v rows (64 x HS) stays in L1/L2

struct Dims4 {
  int64_t B, NH, T, S, HS;
};

// prefix_b < 0: no prefix-LM mask; otherwise it replaces causal (j < prefix_b or j <= t + S - T).
inline bool allowed(const double* mask_b, int64_t t, int64_t j, const Dims4& d, bool causal, int64_t prefix_b) {
  if (mask_b && mask_b[j] == 0) return false;
  if (prefix_b >= 0) return j < prefix_b || j <= t + d.S - d.T;
  return !causal || j <= t + d.S - d.T;
}

template <class T>
void forward_kernel(const T* q, const T* k, const T* v, const double* mask, T* o, double* L, const Dims4& d, bool causal,
                    const int64_t* prefix) {
  const double c = 1.0 / std::sqrt((double)d.HS);
  const int64_t BH = d.B * d.NH;
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < BH; bh++) {
    const int64_t b = bh / d.NH;
    const T* qb = q + bh * d.T * d.HS;
    const T* kb = k + bh * d.S * d.HS;
    const T* vb = v + bh * d.S * d.HS;
    const double* mb = mask ? mask + b * d.S : nullptr;
    const int64_t pb = prefix ? prefix[b] : -1;
    std::vector<double> acc(d.HS), s(kBlock);
    for (int64_t t = 0; t < d.T; t++) {
      const T* qt = qb + t * d.HS;
      double m = -std::numeric_limits<double>::infinity(), l = 0;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t j0 = 0; j0 < d.S; j0 += kBlock) {
        const int64_t j1 = std::min(d.S, j0 + kBlock);
        double mblk = -std::numeric_limits<double>::infinity();
        for (int64_t j = j0; j < j1; j++) {
          if (!allowed(mb, t, j, d, causal, pb)) {
            s[j - j0] = -std::numeric_limits<double>::infinity();
            continue;
          }
          const T* kj = kb + j * d.HS;
          double dot = 0;
          for (int64_t e = 0; e < d.HS; e++) dot += (double)qt[e] * (double)kj[e];
          s[j - j0] = c * dot;
          mblk = std::max(mblk, s[j - j0]);
        }
        if (mblk == -std::numeric_limits<double>::infinity()) continue;  // nothing allowed in this block
        const double mnew = std::max(m, mblk);
        const double r = std::exp(m - mnew);  // rescales what was summed under the old max (0 when m = -inf)
        l *= r;
        for (int64_t e = 0; e < d.HS; e++) acc[e] *= r;
        for (int64_t j = j0; j < j1; j++) {
          if (s[j - j0] == -std::numeric_limits<double>::infinity()) continue;
          const double p = std::exp(s[j - j0] - mnew);
          l += p;
          const T* vj = vb + j * d.HS;
          for (int64_t e = 0; e < d.HS; e++) acc[e] += p * (double)vj[e];
        }
        m = mnew;
      }
      T* ot = o + (bh * d.T + t) * d.HS;
      if (l == 0) {  // no allowed key: o_t = 0, L_t = +inf so every recomputed p is 0
        for (int64_t e = 0; e < d.HS; e++) ot[e] = 0;
        L[bh * d.T + t] = std::numeric_limits<double>::infinity();
        continue;
      }
      for (int64_t e = 0; e < d.HS; e++) ot[e] = (T)(acc[e] / l);
      L[bh * d.T + t] = m + std::log(l);
    }
  }
}

template <class T>
void backward_kernel(const T* q, const T* k, const T* v, const double* mask, const T* o, const double* L, const T* dout, T* dq,
                     T* dk, T* dv, const Dims4& d, bool causal, const int64_t* prefix) {
  const double c = 1.0 / std::sqrt((double)d.HS);
  const int64_t BH = d.B * d.NH;
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < BH; bh++) {
    const int64_t b = bh / d.NH;
    const T* qb = q + bh * d.T * d.HS;
    const T* kb = k + bh * d.S * d.HS;
    const T* vb = v + bh * d.S * d.HS;
    const double* mb = mask ? mask + b * d.S : nullptr;
    const int64_t pb = prefix ? prefix[b] : -1;
    std::vector<double> dkb(d.S * d.HS, 0.0), dvb(d.S * d.HS, 0.0), dqt(d.HS);
    for (int64_t t = 0; t < d.T; t++) {
      const T* qt = qb + t * d.HS;
      const T* ot = o + (bh * d.T + t) * d.HS;
      const T* gt = dout + (bh * d.T + t) * d.HS;
      const double Lt = L[bh * d.T + t];
      double Dt = 0;
      for (int64_t e = 0; e < d.HS; e++) Dt += (double)gt[e] * (double)ot[e];
      std::fill(dqt.begin(), dqt.end(), 0.0);
      for (int64_t j0 = 0; j0 < d.S; j0 += kBlock) {  // the same blocks as the forward, recomputed
        const int64_t j1 = std::min(d.S, j0 + kBlock);
        for (int64_t j = j0; j < j1; j++) {
          if (!allowed(mb, t, j, d, causal, pb)) continue;
          const T* kj = kb + j * d.HS;
          const T* vj = vb + j * d.HS;
          double dot = 0, dp = 0;
          for (int64_t e = 0; e < d.HS; e++) {
            dot += (double)qt[e] * (double)kj[e];
            dp += (double)gt[e] * (double)vj[e];
          }
          const double p = std::exp(c * dot - Lt);
          const double ds = p * (dp - Dt);
          double* dkj = dkb.data() + j * d.HS;
          double* dvj = dvb.data() + j * d.HS;
          for (int64_t e = 0; e < d.HS; e++) {
            dvj[e] += p * (double)gt[e];
            dqt[e] += c * ds * (double)kj[e];
            dkj[e] += c * ds * (double)qt[e];
          }
        }
      }
      T* dqo = dq + (bh * d.T + t) * d.HS;
      for (int64_t e = 0; e < d.HS; e++) dqo[e] = (T)dqt[e];
    }
    for (int64_t i = 0; i < d.S * d.HS; i++) {
      dk[bh * d.S * d.HS + i] = (T)dkb[i];
      dv[bh * d.S * d.HS + i] = (T)dvb[i];
    }
  }
}

struct FusedAttentionNode : Node {
  Tensor q, k, v, mask, o, L;  // mask: f64 (B, S) or undefined; L: f64 (B, NH, T)
  std::vector<int64_t> prefix;  // (B) or empty
  Dims4 d{};
  bool causal = false;
  const char* name() const override { return "fused_attention"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    if (!q.defined()) fail("fused_attention: backward called twice without retain_graph");
    Tensor g = dy.to(q.dtype()).contiguous();
    Tensor dq = Tensor::empty(q.shape(), q.dtype()), dk = Tensor::empty(k.shape(), q.dtype()),
           dv = Tensor::empty(v.shape(), q.dtype());
    dispatch_float(q.dtype(), "fused_attention", [&]<class T>() {
      backward_kernel<T>(q.data<T>(), k.data<T>(), v.data<T>(), mask.defined() ? mask.data<double>() : nullptr, o.data<T>(),
                         L.data<double>(), g.data<T>(), dq.data<T>(), dk.data<T>(), dv.data<T>(), d, causal,
                         prefix.empty() ? nullptr : prefix.data());
    });
    return {needs_grad(0) ? dq : Tensor(), needs_grad(1) ? dk : Tensor(), needs_grad(2) ? dv : Tensor()};
  }
  void release() override { q = k = v = mask = o = L = Tensor(); }
};

}  // namespace

Var fused_attention(const Var& q, const Var& k, const Var& v, const Tensor& key_mask, bool causal, const Tensor& prefix) {
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4)
    fail("fused_attention: expected q, k, v of rank 4 (B, NH, T, HS), found " + shape_str(q.shape()) + ", " +
         shape_str(k.shape()) + ", " + shape_str(v.shape()));
  Dims4 d{q.size(0), q.size(1), q.size(2), k.size(2), q.size(3)};
  if (k.shape() != Shape{d.B, d.NH, d.S, d.HS} || v.shape() != k.shape())
    fail("fused_attention: k and v must be (B, NH, S, HS) = " + shape_str({d.B, d.NH, d.S, d.HS}) + ", found k " +
         shape_str(k.shape()) + ", v " + shape_str(v.shape()));
  if (k.dtype() != q.dtype() || v.dtype() != q.dtype()) fail("fused_attention: q, k, v must have one dtype");
  const std::vector<int64_t> P =
      prefix.defined() ? prefix_lengths(prefix, d.B, d.S, "fused_attention") : std::vector<int64_t>();
  if ((causal || !P.empty()) && d.T > d.S)
    fail("fused_attention: causal needs T <= S, found T = " + std::to_string(d.T) + ", S = " + std::to_string(d.S));
  Tensor mask;
  if (key_mask.defined()) {
    if (key_mask.shape() != Shape{d.B, d.S})
      fail("fused_attention: key_mask shape mismatch: expected (B, S) = " + shape_str({d.B, d.S}) + ", found " +
           shape_str(key_mask.shape()));
    mask = key_mask.to(DType::f64).contiguous();
  }
  Tensor qc = q.data().contiguous(), kc = k.data().contiguous(), vc = v.data().contiguous();
  Tensor o = Tensor::empty(q.shape(), q.dtype()), L = Tensor::empty({d.B, d.NH, d.T}, DType::f64);
  dispatch_float(q.dtype(), "fused_attention", [&]<class T>() {
    forward_kernel<T>(qc.data<T>(), kc.data<T>(), vc.data<T>(), mask.defined() ? mask.data<double>() : nullptr, o.data<T>(),
                      L.data<double>(), d, causal, P.empty() ? nullptr : P.data());
  });
  if (!any_requires_grad({q, k, v})) return Var(o);
  auto n = std::make_shared<FusedAttentionNode>();
  n->q = qc, n->k = kc, n->v = vc, n->mask = mask, n->o = o, n->L = L, n->d = d, n->causal = causal, n->prefix = P;
  return record(n, o, {q, k, v});
}

}  // namespace dl::nn
