// nn/fused/qkv_attention.cpp - the packed-qkv attention primitive on sgemm, or under Precision::bf16 on bf16_gemm (math in
// the header).
#include "nn/fused/qkv_attention.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "nn/attention/attention_ops.h"  // prefix_lengths
#include "nn/fused/softmax_exp.h"        // the bf16 products' exponential
#include "tensor/bf16.h"                 // bf16_products_active
#include "tensor/bf16_gemm.h"            // the bf16 products
#include "tensor/nn_kernels.h"

namespace dl::nn {

namespace {

struct Dims {
  int64_t B, T, C, NH, HS;
};

// The dropout mask: keep(b, h, t, s) = row_draw(row_key(seed, row), s) >= thr, row = (b NH + h) T + t
// (tensor/nn_kernels.h). Counter-based, so the backward regenerates the forward's mask without storing it.

struct Drop {
  bool on = false;
  uint64_t seed = 0, thr = 0;  // keep when the 32-bit hash >= thr = p 2^32
  float r = 1;                 // 1 / (1 - p)
};
Drop make_drop(double p, bool on, uint64_t seed) {
  Drop d;
  d.on = on && p > 0;
  d.seed = seed;
  d.thr = (uint64_t)std::llround(p * 4294967296.0);
  d.r = p < 1 ? (float)(1.0 / (1.0 - p)) : 0.f;
  return d;
}
// m[s] = keep ? r : 0 for s < n
inline void mask_row(const Drop& dr, uint64_t row, float* m, int64_t n) {
  const uint32_t key = row_key(dr.seed, row), t = keep_threshold32(dr.thr);
  const float r = keep_scale(dr.thr, dr.r);
#pragma omp simd
  for (int64_t s = 0; s < n; s++) m[s] = row_draw(key, (uint32_t)s) >= t ? r : 0.f;
}

// Runs f(bh, thread scratch) over the B NH pairs on OpenMP threads, with OpenBLAS single-threaded meanwhile.
template <class F> void over_pairs(const Dims& d, int64_t scratch_floats, F&& f) {
  const int nt = omp_get_max_threads();
  Tensor scratch = Tensor::empty({nt, scratch_floats});  // from the caching allocator: no fresh pages per step
  float* base = scratch.data<float>();
  const int blas_threads = openblas_get_num_threads();
  openblas_set_num_threads(1);
#pragma omp parallel num_threads(nt)
  {
    float* mine = base + omp_get_thread_num() * scratch_floats;
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < d.B * d.NH; bh++) f(bh, mine);
  }
  openblas_set_num_threads(blas_threads);
}

// One product Y (M, N) = alpha op(A) op(B) of a pair, on this thread: sgemm (float32, the path's original products),
// or under Precision::bf16 (bf16 = true) tensor/bf16_gemm.h's VDPBF16PS GEMM - both operands rounded to bf16, float32
// sums - and then alpha in float32. The bf16 callers pass alpha = 1 for S and dK, whose c is folded into Q' = c Q before
// rounding (as the blocked attention's products, nn/fused/flash_products.h), and alpha = c for dQ = c (dS K).
void product(bool bf16, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
             const float* B, int64_t ldb, float* Y, int64_t ldy) {
  if (!bf16) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N, (blasint)K,
                alpha, A, (blasint)lda, B, (blasint)ldb, 0.f, Y, (blasint)ldy);
    return;
  }
  bf16_gemm(ta, tb, M, N, K, A, lda, B, ldb, 0.f, Y, ldy, /*threads=*/1);
  if (alpha != 1.f)
    for (int64_t i = 0; i < M; i++)
#pragma omp simd
      for (int64_t j = 0; j < N; j++) Y[i * ldy + j] *= alpha;
}

// The three product shapes of one (b, h), T x T matrices with leading dimension T. Causal: cut into row blocks
// of kCausalBlock, each product skips the all-zero upper triangle beyond its block (about half the work).
constexpr int64_t kCausalBlock = 64;
// S = alpha A B^T, A and B (T, HS) with leading dims lda, ldb; causal rows t0..t1 only need columns < t1.
void scores(bool bf16, const float* A, int64_t lda, const float* B, int64_t ldb, float* S, const Dims& d, bool causal,
            float alpha) {
  const int64_t T = d.T, blk = causal ? kCausalBlock : T;
  for (int64_t t0 = 0; t0 < T; t0 += blk) {
    const int64_t t1 = std::min(T, t0 + blk), n = causal ? t1 : T;
    product(bf16, false, true, t1 - t0, n, d.HS, alpha, A + t0 * lda, lda, B, ldb, S + t0 * T, T);
  }
}
// Y = alpha X W: X (T, T), W (T, HS) with leading dim ldw, Y (T, HS) with leading dim ldy; causal row t0..t1 sums s < t1.
void rows_times(bool bf16, const float* X, const float* W, int64_t ldw, float* Y, int64_t ldy, const Dims& d, bool causal,
                float alpha) {
  const int64_t T = d.T, blk = causal ? kCausalBlock : T;
  for (int64_t t0 = 0; t0 < T; t0 += blk) {
    const int64_t t1 = std::min(T, t0 + blk), n = causal ? t1 : T;
    product(bf16, false, false, t1 - t0, d.HS, n, alpha, X + t0 * T, T, W, ldw, Y + t0 * ldy, ldy);
  }
}
// Y = alpha X^T W: X (T, T), W (T, HS); causal output rows s0..s1 sum over t >= s0.
void cols_times(bool bf16, const float* X, const float* W, int64_t ldw, float* Y, int64_t ldy, const Dims& d, bool causal,
                float alpha) {
  const int64_t T = d.T, blk = causal ? kCausalBlock : T;
  for (int64_t s0 = 0; s0 < T; s0 += blk) {
    const int64_t s1 = std::min(T, s0 + blk), t0 = causal ? s0 : 0;
    product(bf16, true, false, s1 - s0, d.HS, T - t0, alpha, X + t0 * T + s0, T, W + t0 * ldw, ldw, Y + s0 * ldy, ldy);
  }
}

// The operand Q of S = c Q K^T and dK = c dS^T Q: float32 reads Q in place (c applied by the product); bf16 reads
// Q' = c Q (T, HS), computed in float32 into `scratch` and rounded by the product, as the blocked attention does.
struct QOperand {
  const float* q;
  int64_t ld;
  float alpha;
};
QOperand q_operand(bool bf16, const float* Q, int64_t ld, float c, const Dims& d, float* scratch) {
  if (!bf16) return {Q, ld, c};
  for (int64_t t = 0; t < d.T; t++)
#pragma omp simd
    for (int64_t e = 0; e < d.HS; e++) scratch[t * d.HS + e] = c * Q[t * ld + e];
  return {scratch, d.HS, 1.f};
}

// The composed path's fill for scores of padding keys: exp(-1e9 - max) is exactly 0 unless every key of the row is
// padding; then every score is the fill and the row's weights are uniform (1/n over its n keys).
constexpr float kPadScore = -1e9f;
// The first real key of a sequence (T when it is all padding): row t has no real key among its n keys iff
// first_real >= n. Such rows are recomputed as uniform in the backward: their L_t = -1e9 + log n rounds to -1e9
// in float, so exp(S - L) would give 1 instead of 1/n.
inline int64_t first_real(const float* km, int64_t T) {
  if (!km) return 0;
  int64_t f = 0;
  while (f < T && km[f] == 0.f) f++;
  return f;
}
// Scores of padding keys (km[s] == 0) replaced by kPadScore, s < n.
inline void fill_padding(float* s, const float* km, int64_t n) {
  if (!km) return;
#pragma omp simd
  for (int64_t j = 0; j < n; j++) s[j] = km[j] != 0.f ? s[j] : kPadScore;
}

// The keys row t may see are s < row_keys(t): all T, causal t + 1, prefix-LM max(P_b, t + 1) (prefix_b >= 0).
inline int64_t row_keys(int64_t t, int64_t T, bool causal, int64_t prefix_b) {
  if (prefix_b >= 0) return std::max(prefix_b, t + 1);
  return causal ? t + 1 : T;
}

// x[j] = e^(x[j] - shift) for j < n: exp_fast, or under the bf16 products the shorter exponential that the blocked
// path takes too (nn/fused/softmax_exp.h: P is rounded to bf16 for P V).
inline void exp_shifted(bool bf16, float* x, int64_t n, float shift) {
  if (bf16) {
#pragma omp simd
    for (int64_t j = 0; j < n; j++) x[j] = softmax_exp::exp_short(x[j] - shift);
  } else {
#pragma omp simd
    for (int64_t j = 0; j < n; j++) x[j] = exp_fast(x[j] - shift);
  }
}

// Forward of one (b, h): S = c Q K^T, P = softmax rows, Pd = P M, O = Pd V; L_t saved. key_mask (B, T) or null.
// Scratch: S (T, T), M (T), Qs (T, HS) (used in bf16).
void forward_pair(const float* qkv, const float* key_mask, float* out, float* L, float* S, float* M, float* Qs, const Dims& d,
                  int64_t bh, bool causal, const Drop& dr, const int64_t* prefix, bool bf16) {
  const int64_t b = bh / d.NH, h = bh % d.NH, T = d.T, C = d.C, HS = d.HS, ld = 3 * C;
  const float* Q = qkv + b * T * ld + h * HS;
  const float *K = Q + C, *V = Q + 2 * C;
  const float c = (float)(1.0 / std::sqrt((double)HS));
  const float* km = key_mask ? key_mask + b * T : nullptr;
  const int64_t pb = prefix ? prefix[b] : -1;
  const bool tri = causal && !prefix;  // skip the upper triangle in the products (a prefix-LM row may reach past t)
  const QOperand q = q_operand(bf16, Q, ld, c, d, Qs);
  scores(bf16, q.q, q.ld, K, ld, S, d, tri, q.alpha);
  for (int64_t t = 0; t < T; t++) {
    float* s = S + t * T;
    const int64_t n = row_keys(t, T, causal, pb);  // masked scores give exact zeros, as exp of the composed -1e9 fill does
    fill_padding(s, km, n);
    float m = s[0];
#pragma omp simd reduction(max : m)
    for (int64_t j = 0; j < n; j++) m = s[j] > m ? s[j] : m;
    exp_shifted(bf16, s, n, m);
    const float sum = lane_sum<float>(n, [&](int64_t j) { return s[j]; });
    const float inv = 1.f / sum;
    L[bh * T + t] = m + std::log(sum);
#pragma omp simd
    for (int64_t j = 0; j < n; j++) s[j] *= inv;
    if (dr.on) {
      mask_row(dr, bh * T + t, M, n);
#pragma omp simd
      for (int64_t j = 0; j < n; j++) s[j] *= M[j];
    }
    for (int64_t j = n; j < T; j++) s[j] = 0.f;
  }
  rows_times(bf16, S, V, ld, out + b * T * C + h * HS, C, d, tri, 1.f);  // O = Pd V
}

// Backward of one (b, h); P and Pd are recomputed from Q, K, L and the hash. Scratch: P, X (T, T), M (T), Qs (T, HS).
void backward_pair(const float* qkv, const float* key_mask, const float* L, const float* dO, float* dqkv, float* P, float* X,
                   float* M, float* Qs, const Dims& d, int64_t bh, bool causal, const Drop& dr, const int64_t* prefix,
                   bool bf16) {
  const int64_t b = bh / d.NH, h = bh % d.NH, T = d.T, C = d.C, HS = d.HS, ld = 3 * C;
  const float* Q = qkv + b * T * ld + h * HS;
  const float *K = Q + C, *V = Q + 2 * C;
  const float* G = dO + b * T * C + h * HS;  // dO, leading dimension C
  float* dQ = dqkv + b * T * ld + h * HS;
  float *dK = dQ + C, *dV = dQ + 2 * C;
  const float c = (float)(1.0 / std::sqrt((double)HS));
  const float* km = key_mask ? key_mask + b * T : nullptr;
  const int64_t pb = prefix ? prefix[b] : -1;
  const bool tri = causal && !prefix;  // skip the upper triangle in the products (a prefix-LM row may reach past t)
  const int64_t first = first_real(km, T);
  const QOperand q = q_operand(bf16, Q, ld, c, d, Qs);
  scores(bf16, q.q, q.ld, K, ld, P, d, tri, q.alpha);
  for (int64_t t = 0; t < T; t++) {  // P = exp(S - L); X = Pd = P M
    float *p = P + t * T, *x = X + t * T;
    const int64_t n = row_keys(t, T, causal, pb);
    const float Lt = L[bh * T + t];
    fill_padding(p, km, n);
    if (first >= n) {
      std::fill(p, p + n, 1.f / (float)n);  // all keys padding: uniform, as in the forward
    } else {
      exp_shifted(bf16, p, n, Lt);
    }
    for (int64_t j = n; j < T; j++) p[j] = 0.f;
    if (dr.on) {
      mask_row(dr, bh * T + t, M, n);
#pragma omp simd
      for (int64_t j = 0; j < n; j++) x[j] = p[j] * M[j];
      for (int64_t j = n; j < T; j++) x[j] = 0.f;
    }
  }
  const float* Pd = dr.on ? X : P;
  cols_times(bf16, Pd, G, C, dV, ld, d, tri, 1.f);  // dV = Pd^T dO
  scores(bf16, G, C, V, ld, X, d, tri, 1.f);        // X = dPd = dO V^T
  for (int64_t t = 0; t < T; t++) {                 // dP = dPd M;  dS = P (dP - sum_s P dP)
    float *p = P + t * T, *x = X + t * T;
    const int64_t n = row_keys(t, T, causal, pb);
    if (dr.on) {
      mask_row(dr, bh * T + t, M, n);
#pragma omp simd
      for (int64_t j = 0; j < n; j++) x[j] *= M[j];
    }
    const float D = lane_sum<float>(n, [&](int64_t j) { return x[j] * p[j]; });
#pragma omp simd
    for (int64_t j = 0; j < n; j++) x[j] = p[j] * (x[j] - D);
    if (km) {
#pragma omp simd
      for (int64_t j = 0; j < n; j++) x[j] = km[j] != 0.f ? x[j] : 0.f;
    }
    for (int64_t j = n; j < T; j++) x[j] = 0.f;
  }
  rows_times(bf16, X, K, ld, dQ, ld, d, tri, c);            // dQ = c dS K
  cols_times(bf16, X, q.q, q.ld, dK, ld, d, tri, q.alpha);  // dK = c dS^T Q (Q' in bf16)
}

struct QKVAttentionNode : Node {
  Tensor qkv, L, key_mask;      // qkv (B, T, 3C) contiguous; L (B, NH, T); key_mask (B, T) f32 or undefined
  std::vector<int64_t> prefix;  // (B) or empty
  Dims d{};
  bool causal = false;
  Drop drop;
  bool bf16 = false;  // the forward's products were bf16: the backward's are too
  const char* name() const override { return "qkv_attention"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    if (!qkv.defined()) fail("qkv_attention: backward called twice without retain_graph");
    Tensor g = dy.to(DType::f32).contiguous();
    Tensor dqkv = Tensor::empty(qkv.shape());
    const float *pq = qkv.data<float>(), *pl = L.data<float>(), *pg = g.data<float>();
    const float* pk = key_mask.defined() ? key_mask.data<float>() : nullptr;
    float* pd = dqkv.data<float>();
    const int64_t T = d.T;
    over_pairs(d, 2 * T * T + T + T * d.HS, [&](int64_t bh, float* scratch) {
      backward_pair(pq, pk, pl, pg, pd, scratch, scratch + T * T, scratch + 2 * T * T, scratch + 2 * T * T + T, d, bh, causal,
                    drop, prefix.empty() ? nullptr : prefix.data(), bf16);
    });
    return {dqkv};
  }
  void release() override { qkv = L = key_mask = Tensor(); }
};

}  // namespace

void check_packed_qkv(const char* op, const Var& qkv, int64_t heads, double p, bool any_device) {
  const std::string name = op;
  if (qkv.dim() != 3 || qkv.size(2) % 3 || heads <= 0 || (qkv.size(2) / 3) % heads)
    fail(name + ": expected qkv (B, T, 3C) with C divisible by heads = " + std::to_string(heads) + ", found " +
         shape_str(qkv.shape()));
  if (qkv.dtype() != DType::f32 || (!any_device && qkv.data().device() != Device::cpu))
    fail(name + ": implemented for f32 " + (any_device ? "" : "CPU ") + "tensors (use the composed attention otherwise), found " +
         dtype_name(qkv.dtype()) + " on " + device_name(qkv.data().device()));
  if (!(p >= 0 && p <= 1)) fail(name + ": dropout p must be in [0, 1], found " + std::to_string(p));
}

Var qkv_attention(const Var& qkv, int64_t heads, bool causal, double p, bool training, Generator& g, const Tensor& key_mask,
                  const Tensor& prefix) {
  check_packed_qkv("qkv_attention", qkv, heads, p);
  Dims d{qkv.size(0), qkv.size(1), qkv.size(2) / 3, heads, qkv.size(2) / 3 / heads};
  if (key_mask.defined() && key_mask.shape() != Shape{d.B, d.T})
    fail("qkv_attention: key_mask shape mismatch: expected (B, T) = " + shape_str({d.B, d.T}) + ", found " +
         shape_str(key_mask.shape()));
  const std::vector<int64_t> P = prefix.defined() ? prefix_lengths(prefix, d.B, d.T, "qkv_attention") : std::vector<int64_t>();
  const int64_t* pp = P.empty() ? nullptr : P.data();
  Tensor km = key_mask.defined() ? key_mask.to(DType::f32).contiguous() : Tensor();
  const float* pk = km.defined() ? km.data<float>() : nullptr;
  const bool dropping = training && p > 0;
  Drop dr = make_drop(p, dropping, dropping ? g.next_u64() : 0);
  Tensor x = qkv.data().contiguous();
  Tensor out = Tensor::empty({d.B, d.T, d.C}), L = Tensor::empty({d.B, d.NH, d.T});
  const float* px = x.data<float>();
  float *po = out.data<float>(), *pl = L.data<float>();
  const int64_t T = d.T;
  const bool bf16 = bf16_products_active();  // Precision::bf16 where this CPU computes in bf16 (tensor/bf16.h)
  over_pairs(d, T * T + T + T * d.HS, [&](int64_t bh, float* scratch) {
    forward_pair(px, pk, po, pl, scratch, scratch + T * T, scratch + T * T + T, d, bh, causal, dr, pp, bf16);
  });
  if (!any_requires_grad({qkv})) return Var(out);
  auto n = std::make_shared<QKVAttentionNode>();
  n->qkv = x, n->L = L, n->key_mask = km, n->d = d, n->causal = causal, n->drop = dr, n->prefix = P, n->bf16 = bf16;
  return record(n, out, {qkv});
}

Tensor qkv_attention_mask(uint64_t seed, int64_t B, int64_t NH, int64_t T, double p) {
  Drop dr = make_drop(p, true, seed);
  Tensor m = Tensor::empty({B, NH, T, T});
  float* pm = m.data<float>();
  for (int64_t row = 0; row < B * NH * T; row++) {
    if (dr.on) mask_row(dr, row, pm + row * T, T);
    else
      for (int64_t s = 0; s < T; s++) pm[row * T + s] = 1.f;
  }
  return m;
}

uint64_t qkv_attention_next_seed(const Generator& g) {
  Generator c = g;
  return c.next_u64();
}

}  // namespace dl::nn
