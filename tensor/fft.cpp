// tensor/fft.cpp - FFTW3-backed rfft / irfft and their adjoints (math in fft.h).
#include "tensor/fft.h"

#include <fftw3.h>
#include <omp.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include "tensor/backend.h"
#include "tensor/elementwise.h"
#include "tensor/shape_ops.h"

namespace dl {

std::mutex& fftw_planner_mutex() {
  static std::mutex mu;
  return mu;
}

namespace {

enum class Kind { r2c, c2r };
using PlanKey = std::tuple<int, int64_t, int64_t, int>;  // kind, n, howmany, dtype
// A handful of plans, reused for the process's life. Never destroyed: a static map would be destroyed at exit
// without its plans (FFTW's memory then unreachable, which LeakSanitizer reports); this one stays reachable.
std::map<PlanKey, void*>& g_plans = *new std::map<PlanKey, void*>;

// A plan for `howmany` contiguous rows of length n (real) / n/2+1 (complex), made on arrays with the
// alignment every later call will have (16-byte aligned).
template <class T> void* get_plan(Kind kind, int64_t n, int64_t howmany, T* in, T* out) {
  PlanKey key{(int)kind, n, howmany, (int)dtype_of<T>()};
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  auto it = g_plans.find(key);
  if (it != g_plans.end()) return it->second;
  int ni = (int)n, h = (int)(n / 2 + 1), hm = (int)howmany;
  void* p;
  if constexpr (std::is_same_v<T, float>) {
    p = kind == Kind::r2c
            ? (void*)fftwf_plan_many_dft_r2c(1, &ni, hm, in, nullptr, 1, ni, (fftwf_complex*)out, nullptr, 1, h, FFTW_ESTIMATE)
            : (void*)fftwf_plan_many_dft_c2r(1, &ni, hm, (fftwf_complex*)in, nullptr, 1, h, out, nullptr, 1, ni,
                                             FFTW_ESTIMATE | FFTW_DESTROY_INPUT);
  } else {
    p = kind == Kind::r2c
            ? (void*)fftw_plan_many_dft_r2c(1, &ni, hm, in, nullptr, 1, ni, (fftw_complex*)out, nullptr, 1, h, FFTW_ESTIMATE)
            : (void*)fftw_plan_many_dft_c2r(1, &ni, hm, (fftw_complex*)in, nullptr, 1, h, out, nullptr, 1, ni,
                                            FFTW_ESTIMATE | FFTW_DESTROY_INPUT);
  }
  if (!p) fail("fft: FFTW could not make a plan for n = " + std::to_string(n) + ", batch " + std::to_string(howmany));
  g_plans[key] = p;
  return p;
}

template <class T> void execute(void* plan, Kind kind, T* in, T* out) {
  if constexpr (std::is_same_v<T, float>) {
    if (kind == Kind::r2c) fftwf_execute_dft_r2c((fftwf_plan)plan, in, (fftwf_complex*)out);
    else fftwf_execute_dft_c2r((fftwf_plan)plan, (fftwf_complex*)in, out);
  } else {
    if (kind == Kind::r2c) fftw_execute_dft_r2c((fftw_plan)plan, in, (fftw_complex*)out);
    else fftw_execute_dft_c2r((fftw_plan)plan, (fftw_complex*)in, out);
  }
}

bool aligned16(const void* p) { return ((uintptr_t)p & 15) == 0; }

// Transform `rows` rows: r2c reads rows of n reals and writes rows of n/2+1 complex; c2r the reverse
// (and destroys its input). Both arrays contiguous and 16-byte aligned. Rows are split into chunks whose
// starts stay 16-byte aligned, one per thread, each running the same cached plan.
template <class T> void run_rows(Kind kind, int64_t n, int64_t rows, T* in, T* out) {
  if (rows == 0) return;
  int64_t h = n / 2 + 1;
  int64_t in_row = kind == Kind::r2c ? n : 2 * h, out_row = kind == Kind::r2c ? 2 * h : n;
  int64_t g = 1;
  while (((g * in_row * (int64_t)sizeof(T)) % 16 || (g * out_row * (int64_t)sizeof(T)) % 16) && g < 16) g *= 2;
  int nt = omp_get_max_threads();
  int64_t chunks = 1;
  if (nt > 1 && !omp_in_parallel() && rows * n >= (1 << 15)) chunks = std::max<int64_t>(1, std::min<int64_t>(nt, rows / g));
  std::vector<int64_t> start(chunks + 1);
  for (int64_t c = 0; c < chunks; c++) start[c] = (rows * c / chunks) / g * g;
  start[chunks] = rows;
  std::vector<void*> plans(chunks);
  for (int64_t c = 0; c < chunks; c++)  // planning is serial (and under the cache's mutex)
    if (start[c + 1] > start[c])
      plans[c] = get_plan<T>(kind, n, start[c + 1] - start[c], in + start[c] * in_row, out + start[c] * out_row);
#pragma omp parallel for num_threads(chunks) schedule(static, 1) if (chunks > 1)
  for (int64_t c = 0; c < chunks; c++)
    if (start[c + 1] > start[c]) execute<T>(plans[c], kind, in + start[c] * in_row, out + start[c] * out_row);
}

Shape with_last(const Shape& s, int drop, std::initializer_list<int64_t> add) {
  Shape r(s.begin(), s.end() - drop);
  r.insert(r.end(), add);
  return r;
}

// The Hermitian weights w_k of fft.h, times `scale`, applied in place to rows of n/2+1 complex bins; `inverse`
// divides instead of multiplying.
template <class T> void weight_bins_cpu(T* p, int64_t rows, int64_t n, double scale, bool inverse) {
  int64_t h = n / 2 + 1, mid_end = (n - 1) / 2;  // bins 1..mid_end have w = 2
  T w1 = (T)scale, w2 = (T)(inverse ? scale / 2 : scale * 2);
  parallel_for(rows, std::max<int64_t>(1, 16384 / h), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      T* b = p + r * 2 * h;
      for (int64_t k = 0; k < h; k++) {
        T w = (k >= 1 && k <= mid_end) ? w2 : w1;
        b[2 * k] *= w;
        b[2 * k + 1] *= w;
      }
    }
  });
}

// The same on bins of any device, in place: a CPU tensor is weighted by the loop above, a device tensor is multiplied
// by the (h, 1) column of weights, made on the host and moved there.
void weight_bins(Tensor bins, int64_t n, double scale, bool inverse) {
  int64_t h = n / 2 + 1;
  if (bins.device() == Device::cpu)
    return dispatch_float(bins.dtype(), "fft", [&]<class T>() { weight_bins_cpu<T>(bins.data<T>(), bins.numel() / (2 * h), n, scale, inverse); });
  std::vector<double> w(h);
  for (int64_t k = 0; k < h; k++) w[k] = (k >= 1 && k <= (n - 1) / 2) ? (inverse ? scale / 2 : scale * 2) : scale;
  bins.copy_(mul(bins, from_vector(w, {h, 1}).to(bins.dtype()).to(bins.device())));
}

// rows of `src` (..., m, 2) copied into a fresh (rows, h, 2) buffer on its device: bins >= m are zero, bins >= h dropped.
Tensor bins_to(const Tensor& src, int64_t h) {
  int64_t m = src.size(-2);
  Shape s = with_last(src.shape(), 2, {h, 2});
  Tensor buf = m >= h ? Tensor::empty(s, src.dtype(), src.device()) : zeros(s, src.dtype(), src.device());
  int64_t k = std::min(m, h);
  if (k > 0 && buf.numel() > 0) copy_into(buf.narrow(-2, 0, k), src.narrow(-2, 0, k));
  return buf;
}

// rows of length n -> rows of length L (truncate or zero-pad)
Tensor resize_last(const Tensor& x, int64_t L) {
  int64_t n = x.size(-1);
  if (n == L) return x;
  Shape s = with_last(x.shape(), 1, {L});
  Tensor out = L > n ? zeros(s, x.dtype(), x.device()) : Tensor::empty(s, x.dtype(), x.device());
  int64_t k = std::min(n, L);
  if (k > 0 && out.numel() > 0) copy_into(out.narrow(-1, 0, k), x.narrow(-1, 0, k));
  return out;
}

// Both transforms run on the operand's device: FFTW on the CPU, the backend's rfft_rows / irfft_rows (cuFFT) on a
// device, with the same convention (unnormalised, rows of n <-> rows of h = n/2 + 1 bins).
template <class T> Tensor r2c(const Tensor& xin, int64_t n) {  // xin (..., n) -> (..., h, 2), unnormalised
  Tensor x = xin;
  const bool cpu = x.device() == Device::cpu;
  if (!x.is_contiguous() || (cpu && !aligned16(x.raw_data()))) x = x.clone();
  int64_t rows = shape_numel(x.shape()) / std::max<int64_t>(n, 1);
  if (x.dim() > 1) rows = shape_numel(Shape(x.shape().begin(), x.shape().end() - 1));
  Tensor out = Tensor::empty(with_last(x.shape(), 1, {n / 2 + 1, 2}), x.dtype(), x.device());
  if (!cpu) {
    if (rows > 0) require_backend(x.device(), "rfft").rfft_rows(x.view({rows, n}), out.view({rows, n / 2 + 1, 2}));
    return out;
  }
  run_rows<T>(Kind::r2c, n, rows, x.data<T>(), out.data<T>());
  return out;
}

template <class T> Tensor c2r(Tensor bins, int64_t n) {  // bins (..., h, 2) fresh (destroyed) -> (..., n), unnormalised
  int64_t rows = shape_numel(Shape(bins.shape().begin(), bins.shape().end() - 2));
  Tensor out = Tensor::empty(with_last(bins.shape(), 2, {n}), bins.dtype(), bins.device());
  if (bins.device() != Device::cpu) {
    if (rows > 0) require_backend(bins.device(), "irfft").irfft_rows(bins.view({rows, n / 2 + 1, 2}), out.view({rows, n}));
    return out;
  }
  run_rows<T>(Kind::c2r, n, rows, bins.data<T>(), out.data<T>());
  return out;
}

void check_real(const Tensor& x, const char* op) {
  if (x.dim() < 1) fail(std::string(op) + ": expected at least 1 dim, got a scalar");
}
void check_complex(const Tensor& X, const char* op) {
  if (X.dim() < 2 || X.size(-1) != 2)
    fail(std::string(op) + ": expected complex input (..., m, 2) with a trailing (re, im) dim, got " + shape_str(X.shape()));
}
void check_n(int64_t n, const char* op) {
  if (n < 1) fail(std::string(op) + ": n must be >= 1, got " + std::to_string(n));
}

}  // namespace

size_t fft_plan_cache_size() {
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  return g_plans.size();
}

Tensor rfft(const Tensor& x, int64_t n) {
  check_real(x, "rfft");
  if (n < 0) n = x.size(-1);
  check_n(n, "rfft");
  return dispatch_float(x.dtype(), "rfft", [&]<class T>() { return r2c<T>(resize_last(x, n), n); });
}

Tensor irfft(const Tensor& X, int64_t n) {
  check_complex(X, "irfft");
  if (n < 0) n = 2 * (X.size(-2) - 1);
  check_n(n, "irfft");
  int64_t h = n / 2 + 1;
  return dispatch_float(X.dtype(), "irfft", [&]<class T>() {
    Tensor bins = bins_to(X, h);
    // a Hermitian spectrum has real DC and Nyquist bins: their imaginary parts are not part of the input
    bins.narrow(-2, 0, 1).narrow(-1, 1, 1).fill_(0.0);
    if (n % 2 == 0) bins.narrow(-2, h - 1, 1).narrow(-1, 1, 1).fill_(0.0);
    Tensor y = c2r<T>(bins, n);
    return mul_scalar(y, 1.0 / (double)n);
  });
}

Tensor rfft_backward(const Tensor& dX, int64_t n, int64_t L) {
  check_complex(dX, "rfft_backward");
  int64_t h = n / 2 + 1;
  if (dX.size(-2) != h) fail("rfft_backward: expected " + std::to_string(h) + " bins, got " + shape_str(dX.shape()));
  return dispatch_float(dX.dtype(), "rfft_backward", [&]<class T>() {
    Tensor bins = dX.clone();                   // c2r destroys its input
    weight_bins(bins, n, 1.0, /*inverse=*/true);  // Y_k = dX_k / w_k
    return resize_last(c2r<T>(bins, n), L);
  });
}

Tensor irfft_backward(const Tensor& dx, int64_t n, int64_t m) {
  check_real(dx, "irfft_backward");
  if (dx.size(-1) != n) fail("irfft_backward: expected last dim " + std::to_string(n) + ", got " + shape_str(dx.shape()));
  return dispatch_float(dx.dtype(), "irfft_backward", [&]<class T>() {
    Tensor X = r2c<T>(dx, n);
    weight_bins(X, n, 1.0 / (double)n, /*inverse=*/false);  // dX_k = w_k/n rfft(dx)_k
    return bins_to(X, m);
  });
}

Tensor causal_conv(const Tensor& a, const Tensor& b) {
  if (a.dim() < 1 || a.shape() != b.shape() || a.dtype() != b.dtype())
    fail("causal_conv: a " + shape_str(a.shape()) + " " + dtype_name(a.dtype()) + " and b " + shape_str(b.shape()) + " " +
         dtype_name(b.dtype()) + " must have one shape (..., L) and dtype");
  if (a.device() != b.device())
    fail(std::string("causal_conv: a is on ") + device_name(a.device()) + ", b on " + device_name(b.device()));
  const int64_t L = a.size(-1);
  if (a.device() != Device::cpu) {  // the device seam: rows of L, cuFFT's padded product
    Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
    if (a.numel() == 0) return out;
    const int64_t R = a.numel() / L;
    require_backend(a.device(), "causal_conv").fft_conv(a.contiguous().view({R, L}), b.contiguous().view({R, L}), out.view({R, L}));
    return out;
  }
  if (a.numel() == 0) return Tensor::empty(a.shape(), a.dtype());
  const int64_t n = 2 * L;
  Tensor A = rfft(a, n), Bf = rfft(b, n);  // (..., L + 1, 2)
  Tensor ar = A.select(-1, 0), ai = A.select(-1, 1), br = Bf.select(-1, 0), bi = Bf.select(-1, 1);
  Tensor P = stack({sub(mul(ar, br), mul(ai, bi)), add(mul(ar, bi), mul(ai, br))}, -1);  // (ar + i ai)(br + i bi)
  return irfft(P, n).narrow(-1, 0, L).contiguous();
}

}  // namespace dl
