// tensor/linalg.cpp - matmul / linear on OpenBLAS. The strategy (fold batch into M or K, pass transposed
// layouts as CblasTrans, loop only when unavoidable) is described in linalg.h.
#include "tensor/linalg.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <mutex>
#include <type_traits>
#include <utility>

#include "tensor/backend.h"
#include "tensor/bf16.h"
#include "tensor/bf16_gemm.h"
#include "tensor/elementwise.h"
#include "tensor/fast_sgemm.h"
#include "tensor/reduce.h"

namespace dl {

// One thread pool: OpenBLAS is set to one thread once, and a large product is cut into as many column or row
// panels as OpenMP has threads, each panel one single-threaded sgemm on its own core. Two pools (OpenMP's and
// OpenBLAS's pthreads) on two cores fight whenever one spins while the other works (docs/performance.md);
// with one, the elementwise kernels and the products hand the cores to each other without a context switch.
// Panels are cut at multiples of kPanel so the micro-kernels see full tiles; each output element is computed
// by one sgemm over the whole K, so the cut does not change the sums. Inside an OpenMP region (a kernel that
// parallelises over its own batch) the call runs whole on the calling thread.
namespace {
constexpr int64_t kPanel = 64;
constexpr double kSplitWork = 1 << 20;  // M N K below this: one call (the fork costs more than it saves)
std::once_flag g_blas_once;
// OpenBLAS on one thread: the products and gemvs here cut their own panels across the OpenMP threads, and OpenBLAS's
// own threads would sum in an order that depends on them. Every OpenBLAS call site here asks for it first (bias_grad's
// gemv ran multi-threaded when no product had gone through gemm_panels before it, and its bits differed).
void blas_single_threaded() {
  std::call_once(g_blas_once, [] { openblas_set_num_threads(1); });
}

// bias (N values, beta 0 only): C's rows start from it - the tiles' starting value where fast_sgemm takes the product,
// else copied into C for a beta 1 call (the same bits either way).
template <class T>
void blas_call(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, const T* B, int64_t ldb,
               T beta, T* C, int64_t ldc, const T* bias) {
  if constexpr (std::is_same_v<T, float>)
    if (bias && fast_sgemm_applies(ta, tb, M, N, K, alpha, 0.f)) {
      fast_sgemm(ta, tb, M, N, K, A, lda, B, ldb, 0.f, C, ldc, bias);
      return;
    }
  if (bias) {
    for (int64_t i = 0; i < M; i++) std::copy(bias, bias + N, C + i * ldc);
    beta = (T)1;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (fast_sgemm_applies(ta, tb, M, N, K, alpha, beta))  // the AVX-512 twin (tensor/fast_sgemm.h)
      fast_sgemm(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
    else
      cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N,
                  (blasint)K, alpha, A, (blasint)lda, B, (blasint)ldb, beta, C, (blasint)ldc);
  } else
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N, (blasint)K,
                alpha, A, (blasint)lda, B, (blasint)ldb, beta, C, (blasint)ldc);
}

// bias: see blas_call (beta 0 only; linear's y = x w^T + b).
template <class T>
void gemm_panels(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, const T* B, int64_t ldb,
                 T beta, T* C, int64_t ldc, const T* bias = nullptr) {
  blas_single_threaded();
  const int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
  if constexpr (std::is_same_v<T, float>)  // Precision::bf16 (tensor/bf16.h): packs once, cuts its own panels
    if (alpha == 1.f && (beta == 0.f || beta == 1.f) && bf16_products_active()) {
      bf16_gemm(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc, nt, bias);
      return;
    }
  const bool by_rows = M >= N;
  const int64_t units = ((by_rows ? M : N) + kPanel - 1) / kPanel;
  const int parts = (int)std::min<int64_t>(nt, units);
  if (parts < 2 || (double)M * N * K < kSplitWork) {
    blas_call<T>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias);
    return;
  }
#pragma omp parallel for num_threads(parts) schedule(static)
  for (int p = 0; p < parts; p++) {
    const int64_t total = by_rows ? M : N;
    const int64_t i0 = std::min(total, units * p / parts * kPanel), i1 = std::min(total, units * (p + 1) / parts * kPanel);
    if (i1 <= i0) continue;
    if (by_rows)  // rows i0..i1 of op(A) and C
      blas_call<T>(ta, tb, i1 - i0, N, K, alpha, ta ? A + i0 : A + i0 * lda, lda, B, ldb, beta, C + i0 * ldc, ldc, bias);
    else  // columns i0..i1 of op(B) and C
      blas_call<T>(ta, tb, M, i1 - i0, K, alpha, A, lda, tb ? B + i0 * ldb : B + i0, ldb, beta, C + i0, ldc,
                   bias ? bias + i0 : nullptr);
  }
}
}  // namespace

template <>
void gemm<float>(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
                 int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_panels<float>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
template <>
void gemm<double>(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda, const double* B,
                  int64_t ldb, double beta, double* C, int64_t ldc) {
  gemm_panels<double>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

namespace {

// How cblas (row-major) can read an (R, C) matrix with strides (rs, cs): rows contiguous -> NoTrans with
// ld = rs; columns contiguous -> Trans with ld = cs (the storage is then the C x R matrix). A size-1 dim
// leaves its stride free. False when neither holds (e.g. an expanded, stride-0 operand).
bool blas_layout(int64_t R, int64_t C, int64_t rs, int64_t cs, bool& trans, int64_t& ld) {
  if ((C == 1 || cs == 1) && (R == 1 || rs >= std::max<int64_t>(C, 1))) {
    trans = false;
    ld = R == 1 ? std::max<int64_t>(C, 1) : rs;
    return true;
  }
  if ((R == 1 || rs == 1) && (C == 1 || cs >= std::max<int64_t>(R, 1))) {
    trans = true;
    ld = C == 1 ? std::max<int64_t>(R, 1) : cs;
    return true;
  }
  return false;
}

// Do these (size, stride) dims, outer to inner, walk memory as ONE dim? Then give its size and stride.
bool merge_dims(const std::vector<std::pair<int64_t, int64_t>>& dims, int64_t& size, int64_t& stride) {
  size = 1;
  stride = 1;
  bool any = false;
  int64_t in_size = 0, in_stride = 0;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    auto [n, s] = *it;
    if (n == 1) continue;
    if (!any) stride = s;
    else if (s != in_stride * in_size) return false;
    any = true;
    in_size = n;
    in_stride = s;
    size *= n;
  }
  return true;
}

bool last2_blas_ok(const Tensor& t) {
  bool tr;
  int64_t ld;
  return blas_layout(t.size(-2), t.size(-1), t.strides()[t.dim() - 2], t.strides()[t.dim() - 1], tr, ld);
}

Shape batch_of(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

template <class T>
void gemm_strided(int64_t M, int64_t N, int64_t K, const T* A, int64_t ars, int64_t acs, const T* B, int64_t brs, int64_t bcs,
                  T beta, T* C, int64_t ldc) {
  bool ta, tb;
  int64_t lda, ldb;
  if (!blas_layout(M, K, ars, acs, ta, lda) || !blas_layout(K, N, brs, bcs, tb, ldb))
    fail("matmul: internal error, operand layout not usable by BLAS");
  gemm<T>(ta, tb, M, N, K, (T)1, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace

void matmul_into(const Tensor& out, const Tensor& a_in, const Tensor& b_in, bool accumulate) {
  if (a_in.dim() < 2 || b_in.dim() < 2 || out.dim() < 2)
    fail("matmul_into: operands must be at least 2-D, got a " + shape_str(a_in.shape()) + ", b " + shape_str(b_in.shape()) +
         ", out " + shape_str(out.shape()));
  if (a_in.dtype() != b_in.dtype() || out.dtype() != a_in.dtype())
    fail(std::string("matmul: dtypes differ (a ") + dtype_name(a_in.dtype()) + ", b " + dtype_name(b_in.dtype()) + ", out " +
         dtype_name(out.dtype()) + ")");
  if (!out.is_contiguous()) fail("matmul_into: out must be contiguous, got shape " + shape_str(out.shape()));
  int64_t M = a_in.size(-2), K = a_in.size(-1), N = b_in.size(-1);
  if (b_in.size(-2) != K || out.size(-2) != M || out.size(-1) != N)
    fail("matmul: shapes a " + shape_str(a_in.shape()) + " @ b " + shape_str(b_in.shape()) + " -> out " + shape_str(out.shape()) +
         " do not chain");
  Shape full = broadcast_shapes(batch_of(a_in), batch_of(b_in), "matmul");
  Shape bo = batch_of(out);
  if (broadcast_shapes(bo, full, "matmul") != full)
    fail("matmul_into: out batch " + shape_str(bo) + " does not broadcast to the batch " + shape_str(full));
  if (M == 0 || N == 0) return;
  const int64_t nb = shape_numel(full);
  if (nb == 0 || K == 0) {
    if (!accumulate) Tensor(out).zero_();
    return;
  }
  // Only a slice BLAS cannot read at all is copied; transposed slices pass as CblasTrans.
  Tensor a = last2_blas_ok(a_in) ? a_in : a_in.contiguous();
  Tensor b = last2_blas_ok(b_in) ? b_in : b_in.contiguous();
  const int64_t nd = (int64_t)full.size();
  Shape fa = full, fb = full, fo = full;
  fa.insert(fa.end(), {M, K});
  fb.insert(fb.end(), {K, N});
  fo.insert(fo.end(), {M, N});
  Tensor ea = a.expand(fa), eb = b.expand(fb), eo = out.expand(fo);
  const Shape &sa = ea.strides(), &sb = eb.strides(), &so = eo.strides();
  const bool reduce = shape_numel(bo) < nb;

  dispatch_float(a.dtype(), "matmul", [&]<class T>() {
    const T *pa = ea.data<T>(), *pb = eb.data<T>();
    T* po = eo.data<T>();
    const T beta0 = accumulate ? (T)1 : (T)0;
    if (nb == 1) {
      gemm_strided<T>(M, N, K, pa, sa[nd], sa[nd + 1], pb, sb[nd], sb[nd + 1], beta0, po, N);
      return;
    }
    // Fold batch into M: b shared by every batch element, a's batch dims and M walk memory as one dim.
    bool b_shared = true;
    for (int64_t d = 0; d < nd; d++)
      if (full[d] > 1 && sb[d] != 0) b_shared = false;
    if (!reduce && b_shared) {
      std::vector<std::pair<int64_t, int64_t>> dims;
      for (int64_t d = 0; d < nd; d++) dims.push_back({full[d], sa[d]});
      dims.push_back({M, sa[nd]});
      int64_t Mf, sm;
      bool tr;
      int64_t ld;
      if (merge_dims(dims, Mf, sm) && blas_layout(Mf, K, sm, sa[nd + 1], tr, ld)) {
        gemm_strided<T>(Mf, N, K, pa, sm, sa[nd + 1], pb, sb[nd], sb[nd + 1], beta0, po, N);
        return;
      }
    }
    // Fold batch into K: out is the sum over the whole batch, so sum_b A_b B_b = [A_1 .. A_nb] [B_1; ..; B_nb].
    if (shape_numel(bo) == 1) {
      std::vector<std::pair<int64_t, int64_t>> da, db;
      for (int64_t d = 0; d < nd; d++) {
        da.push_back({full[d], sa[d]});
        db.push_back({full[d], sb[d]});
      }
      da.push_back({K, sa[nd + 1]});
      db.push_back({K, sb[nd]});
      int64_t Ka, ska, Kb, skb, lda, ldb;
      bool ta, tb;
      if (merge_dims(da, Ka, ska) && merge_dims(db, Kb, skb) && blas_layout(M, Ka, sa[nd], ska, ta, lda) &&
          blas_layout(Kb, N, skb, sb[nd + 1], tb, ldb)) {
        gemm_strided<T>(M, N, Ka, pa, sa[nd], ska, pb, skb, sb[nd + 1], beta0, po, N);
        return;
      }
    }
    // One sgemm per batch element. Small products run side by side, one batch element per thread (out slices
    // are distinct when out is not a reduction); large ones go one at a time, each cut into panels by gemm.
    if (!reduce && (double)M * N * K < kSplitWork && !omp_in_parallel() && omp_get_max_threads() > 1) {
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < nb; i++) {
        int64_t oa = 0, ob = 0, oo = 0, rem = i;
        for (int64_t d = nd - 1; d >= 0; d--) {
          const int64_t k = rem % full[d];
          rem /= full[d];
          oa += k * sa[d], ob += k * sb[d], oo += k * so[d];
        }
        gemm_strided<T>(M, N, K, pa + oa, sa[nd], sa[nd + 1], pb + ob, sb[nd], sb[nd + 1], beta0, po + oo, N);
      }
      return;
    }
    // Reduced out slices are zeroed once, then every product adds in.
    T beta = beta0;
    if (reduce && !accumulate) {
      Tensor(out).zero_();
      beta = (T)1;
    }
    std::vector<int64_t> idx(nd, 0);
    int64_t oa = 0, ob = 0, oo = 0;
    for (int64_t i = 0; i < nb; i++) {
      gemm_strided<T>(M, N, K, pa + oa, sa[nd], sa[nd + 1], pb + ob, sb[nd], sb[nd + 1], beta, po + oo, N);
      for (int64_t d = nd - 1; d >= 0; d--) {  // odometer over the batch
        oa += sa[d], ob += sb[d], oo += so[d];
        if (++idx[d] < full[d]) break;
        oa -= sa[d] * full[d], ob -= sb[d] * full[d], oo -= so[d] * full[d];
        idx[d] = 0;
      }
    }
  });
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (a.dim() == 0 || b.dim() == 0)
    fail("matmul: both operands need at least 1 dim, got a " + shape_str(a.shape()) + " and b " + shape_str(b.shape()));
  Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
  if (a2.size(-1) != b2.size(-2))
    fail("matmul: inner dims differ: a " + shape_str(a.shape()) + " has K = " + std::to_string(a2.size(-1)) + ", b " +
         shape_str(b.shape()) + " has K = " + std::to_string(b2.size(-2)));
  Shape full;
  try {
    full = broadcast_shapes(batch_of(a2), batch_of(b2), "matmul");
  } catch (const ShapeError&) {
    fail("matmul: batch dims of a " + shape_str(a.shape()) + " and b " + shape_str(b.shape()) + " do not broadcast");
  }
  int64_t M = a2.size(-2), N = b2.size(-1), K = a2.size(-1);
  Shape os = full;
  os.insert(os.end(), {M, N});
  Tensor out;
  if (a.device() != Device::cpu || b.device() != Device::cpu) {
    if (a.device() != b.device()) fail("matmul: operands on different devices");
    int64_t nb = shape_numel(full);
    Shape fa = full, fb = full;
    fa.insert(fa.end(), {M, K});
    fb.insert(fb.end(), {K, N});
    out = Tensor::empty(os, a.dtype(), a.device());
    require_backend(a.device(), "matmul")
        .matmul(a2.expand(fa).contiguous().reshape({nb, M, K}), b2.expand(fb).contiguous().reshape({nb, K, N}),
                out.view({nb, M, N}));
  } else {
    out = Tensor::empty(os, a.dtype());
    matmul_into(out, a2, b2, false);
  }
  if (a.dim() == 1) out = out.squeeze(-2);
  if (b.dim() == 1) out = out.squeeze(-1);
  return out;
}

MatmulGrads matmul_backward(const Tensor& a, const Tensor& b, const Tensor& dy, bool need_a, bool need_b) {
  Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
  Tensor dy2 = dy;  // undo the squeezes of the forward, in reverse order
  if (b.dim() == 1) dy2 = dy2.unsqueeze(-1);
  if (a.dim() == 1) dy2 = dy2.unsqueeze(dy2.dim() - 1);
  MatmulGrads g;
  if (dy.device() != Device::cpu) {  // the device seam: the same products on the backend, broadcast batches summed
    if (need_a) g.da = sum_to(matmul(dy2, b2.transpose(-1, -2)), a2.shape()).reshape(a.shape());
    if (need_b) g.db = sum_to(matmul(a2.transpose(-1, -2), dy2), b2.shape()).reshape(b.shape());
    return g;
  }
  if (need_a) {  // da = dy @ b^T, summed over a's broadcast batch dims by matmul_into's reduction
    Tensor da = Tensor::empty(a2.shape(), a.dtype());
    matmul_into(da, dy2, b2.transpose(-1, -2), false);
    g.da = da.view(a.shape());
  }
  if (need_b) {  // db = a^T @ dy
    Tensor db = Tensor::empty(b2.shape(), b.dtype());
    matmul_into(db, a2.transpose(-1, -2), dy2, false);
    g.db = db.view(b.shape());
  }
  return g;
}

static void check_linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  if (w.dim() != 2 || x.dim() < 1 || x.size(-1) != w.size(1))
    fail("linear: x " + shape_str(x.shape()) + " and weight " + shape_str(w.shape()) +
         " do not match (expected weight (out, in) with in = x's last dim)");
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != w.size(0)))
    fail("linear: bias " + shape_str(bias.shape()) + " expected [" + std::to_string(w.size(0)) + "]");
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  check_linear(x, w, bias);
  if (x.device() != Device::cpu) {  // the device seam: rows folded into one product (R, in) @ (in, out), as backward
    const int64_t in = w.size(1), R = x.numel() / std::max<int64_t>(in, 1);
    Shape ys = x.shape();
    ys.back() = w.size(0);
    Tensor y = matmul(x.reshape({R, in}), w.transpose(0, 1)).reshape(ys);  // not w expanded and copied per batch
    return bias.defined() ? add(y, bias) : y;
  }
  Shape ys = x.shape();
  ys.back() = w.size(0);
  Tensor y = Tensor::empty(ys, x.dtype());
  if (bias.defined() && w.dtype() == x.dtype() && bias.dtype() == x.dtype()) {  // one product, the bias its start
    const Tensor xc = x.contiguous(), wc = w.contiguous(), bc = bias.contiguous();
    const int64_t in = w.size(1), out = w.size(0), R = y.numel() / std::max<int64_t>(out, 1);  // rows of y, also for in = 0
    dispatch_float(x.dtype(), "linear", [&]<class T>() {
      gemm_panels<T>(false, true, R, out, in, (T)1, xc.data<T>(), in, wc.data<T>(), in, (T)0, y.data<T>(), out, bc.data<T>());
    });
    return y;
  }
  if (bias.defined()) copy_into(y, bias);  // the bias is the sgemm's beta = 1 starting value
  Tensor x2 = x.dim() == 1 ? x.unsqueeze(0) : x, y2 = x.dim() == 1 ? y.unsqueeze(0) : y;
  matmul_into(y2, x2, w.transpose(0, 1), bias.defined());
  return y;
}

namespace {
// db = dy^T 1 (a gemv over all rows). Under the bf16 products, in bf16_column_sums' order instead: the order in which the
// kept-input backward sums db while it packs dy (bf16_pack_both), so both backwards give the same bits.
Tensor bias_grad(const Tensor& dy, int64_t out) {
  Tensor dyc = dy.contiguous();
  int64_t R = dyc.numel() / std::max<int64_t>(out, 1);
  if (dy.dtype() == DType::f32 && dy.device() == Device::cpu && bf16_products_active()) {
    Tensor db = Tensor::empty({out});  // bf16_column_sums writes every element (zeros for R = 0)
    bf16_column_sums(dyc.data<float>(), out, R, out, omp_in_parallel() ? 1 : omp_get_max_threads(), db.data<float>());
    return db;
  }
  Tensor db = zeros({out}, dy.dtype());
  blas_single_threaded();
  if (R > 0 && out > 0) {
    dispatch_float(dy.dtype(), "linear_backward", [&]<class T>() {
      std::vector<T> one(R, (T)1);
      // OpenBLAS runs single-threaded (see gemm_panels): the columns are cut in kPanel-aligned halves, one
      // gemv per thread, so the dy read (memory-bound) uses both cores.
      const int64_t units = (out + kPanel - 1) / kPanel;
      const int parts =
          (double)R * out < kSplitWork || omp_in_parallel() ? 1 : (int)std::min<int64_t>(omp_get_max_threads(), units);
#pragma omp parallel for num_threads(parts) schedule(static) if (parts > 1)
      for (int p = 0; p < parts; p++) {
        const int64_t j0 = std::min(out, units * p / parts * kPanel), j1 = std::min(out, units * (p + 1) / parts * kPanel);
        if (j1 <= j0) continue;
        if constexpr (std::is_same_v<T, float>)
          cblas_sgemv(CblasRowMajor, CblasTrans, (blasint)R, (blasint)(j1 - j0), 1.f, dyc.data<T>() + j0, (blasint)out,
                      one.data(), 1, 0.f, db.data<T>() + j0, 1);
        else
          cblas_dgemv(CblasRowMajor, CblasTrans, (blasint)R, (blasint)(j1 - j0), 1.0, dyc.data<T>() + j0, (blasint)out,
                      one.data(), 1, 0.0, db.data<T>() + j0, 1);
      }
    });
  }
  return db;
}

// dx = dy @ w, shaped as x (rows folded into M; a 1-D x is one row): both linear_backwards' input gradient.
Tensor input_grad(const Shape& x_shape, DType dt, const Tensor& dy, const Tensor& w) {
  Tensor dx = Tensor::empty(x_shape, dt);
  const bool row = x_shape.size() == 1;
  matmul_into(row ? dx.unsqueeze(0) : dx, row ? dy.unsqueeze(0) : dy, w, false);
  return dx;
}
}  // namespace

LinearGrads linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, bool need_x, bool need_w, bool need_b) {
  LinearGrads g;
  int64_t out = w.size(0);
  Tensor x2 = x.dim() == 1 ? x.unsqueeze(0) : x, dy2 = x.dim() == 1 ? dy.unsqueeze(0) : dy;
  if (dy.device() != Device::cpu) {  // the device seam: rows folded, three products / sums on the backend
    const int64_t in = w.size(1), R = x.numel() / std::max<int64_t>(in, 1);
    Tensor dyr = dy.reshape({R, out}), xr = x.reshape({R, in});  // (R, out), (R, in)
    if (need_x) g.dx = matmul(dyr, w).reshape(x.shape());      // dx = dy @ w
    if (need_w) g.dw = matmul(dyr.transpose(0, 1), xr);        // dw = dy^T x
    if (need_b) g.db = sum(dyr, {0});                          // db = dy^T 1
    return g;
  }
  if (need_x) g.dx = input_grad(x.shape(), x.dtype(), dy, w);
  if (need_w) {  // dw = sum over rows of dy^T x: rows folded into K, one sgemm
    g.dw = Tensor::empty(w.shape(), w.dtype());
    matmul_into(g.dw, dy2.transpose(-1, -2), x2, false);
  }
  if (need_b) g.db = bias_grad(dy, out);
  return g;
}

bool linear_keeps_bf16_input(const Tensor& x) {
  return x.device() == Device::cpu && x.dtype() == DType::f32 && x.dim() >= 2 && bf16_products_active();
}

Bf16PackedB linear_input_bf16(const Tensor& x) {
  const int64_t in = x.size(-1), R = x.numel() / std::max<int64_t>(in, 1);
  Tensor xc = x.contiguous();
  return bf16_pack_b(false, xc.data<float>(), in, R, in, omp_in_parallel() ? 1 : omp_get_max_threads());
}

Tensor linear_keeping_bf16_input(const Tensor& x, const Tensor& w, const Tensor& bias, Bf16PackedB& kept) {
  check_linear(x, w, bias);
  if (!linear_keeps_bf16_input(x) || w.dtype() != DType::f32 || (bias.defined() && bias.dtype() != DType::f32)) {
    kept = linear_input_bf16(x);
    return linear(x, w, bias);
  }
  const int64_t in = w.size(1), out = w.size(0), R = x.numel() / std::max<int64_t>(in, 1);
  const int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
  const Tensor xc = x.contiguous(), wc = w.contiguous(), bc = bias.defined() ? bias.contiguous() : Tensor();
  const Bf16PackedBoth xb = bf16_pack_both(xc.data<float>(), in, R, in, nt);
  Shape ys = x.shape();
  ys.back() = out;
  Tensor y = Tensor::empty(ys);
  bf16_gemm(false, xb, true, out, wc.data<float>(), in, y.data<float>(), out, nt, bc.defined() ? bc.data<float>() : nullptr);
  kept = xb.across;
  return y;
}

LinearGrads linear_backward(const Bf16PackedB& x, const Shape& x_shape, const Tensor& w, const Tensor& dy, bool need_x,
                            bool need_w, bool need_b) {
  LinearGrads g;
  const int64_t out = w.size(0), in = w.size(1), R = dy.numel() / std::max<int64_t>(out, 1);
  const int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (need_w && (x.N != in || x.K != R))
    fail("linear_backward: the kept bf16 input is (" + std::to_string(x.K) + ", " + std::to_string(x.N) + "), expected (" +
         std::to_string(R) + ", " + std::to_string(in) + ") from dy " + shape_str(dy.shape()) + " and the weight");
  if (need_x && need_w && dy.dtype() == DType::f32 && w.dtype() == DType::f32) {
    // dy read once for both products: its in-row words are dx = dy w's A, its across-row words dw = dy^T x's
    const Tensor dyc = dy.contiguous(), wc = w.contiguous();
    // and db summed from the same read (bias_grad's order under the bf16 products)
    if (need_b) g.db = Tensor::empty({out}, DType::f32);
    const Bf16PackedBoth dyb = bf16_pack_both(dyc.data<float>(), out, R, out, nt, need_b ? g.db.data<float>() : nullptr);
    g.dx = Tensor::empty(x_shape, DType::f32);
    bf16_gemm(false, dyb, false, in, wc.data<float>(), in, g.dx.data<float>(), in, nt);
    g.dw = Tensor::empty(w.shape(), DType::f32);
    bf16_gemm(true, dyb, x, g.dw.data<float>(), in, nt);
    return g;
  }
  if (need_x) g.dx = input_grad(x_shape, DType::f32, dy, w);
  if (need_w) {  // dw = dy^T x from x's pairs: the product linear_backward's matmul_into makes, less the packing of x
    Tensor dyc = dy.contiguous();
    g.dw = Tensor::empty(w.shape(), DType::f32);
    bf16_gemm(true, out, dyc.data<float>(), out, x, g.dw.data<float>(), in, nt);
  }
  if (need_b) g.db = bias_grad(dy, out);
  return g;
}

}  // namespace dl
