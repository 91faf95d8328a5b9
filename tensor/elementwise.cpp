// tensor/elementwise.cpp - CPU kernels for tensor/elementwise.h.
//
// All elementwise work goes through one strided loop (for_each_row): operands are expanded to the output
// shape, adjacent dims that are contiguous for every operand are merged, and the loop runs over "rows"
// of the last merged dim with one stride per operand (0 for a broadcast operand). Rows - and a few long rows, in
// pieces - are split over threads with OpenMP when the work is large enough to pay for it.
#include "tensor/elementwise.h"
#include "tensor/nn_kernels.h"
#include "tensor/reduce.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace dl {

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& f) {
  if (n <= 0) return;
  int nt = omp_get_max_threads();
  if (n < 2 * grain || nt == 1 || omp_in_parallel()) {
    f(0, n);
    return;
  }
  int64_t chunks = std::min<int64_t>(nt, (n + grain - 1) / grain);
#pragma omp parallel for num_threads(chunks) schedule(static)
  for (int64_t c = 0; c < chunks; c++) f(n * c / chunks, n * (c + 1) / chunks);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; i++) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      fail(std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast (dim " + std::to_string(i) +
           ": " + std::to_string(da) + " vs " + std::to_string(db) + ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace {

constexpr int kMaxOps = 4;

// Operands viewed with the output's shape; merged dims; strides per operand (in elements).
struct StridedLoop {
  Shape shape;                                        // merged shape
  std::vector<std::array<int64_t, kMaxOps>> strides;  // per dim, per operand
  int nops = 0;
};

StridedLoop make_loop(const Shape& shape, std::initializer_list<const Tensor*> ops) {
  StridedLoop L;
  L.nops = (int)ops.size();
  std::vector<std::array<int64_t, kMaxOps>> st(shape.size());
  int k = 0;
  for (const Tensor* t : ops) {
    for (size_t d = 0; d < shape.size(); d++) st[d][k] = shape[d] == 1 ? 0 : t->strides()[d];
    k++;
  }
  // drop size-1 dims, then merge dim d into d+1 when every operand is contiguous across the pair
  for (size_t d = 0; d < shape.size(); d++) {
    if (shape[d] == 1) continue;
    if (!L.shape.empty()) {
      bool mergeable = true;
      for (int o = 0; o < L.nops; o++)
        if (L.strides.back()[o] != st[d][o] * shape[d]) mergeable = false;
      if (mergeable) {
        L.shape.back() *= shape[d];
        L.strides.back() = st[d];
        continue;
      }
    }
    L.shape.push_back(shape[d]);
    L.strides.push_back(st[d]);
  }
  if (L.shape.empty()) {
    L.shape.push_back(1);
    L.strides.push_back({0, 0, 0, 0});
  }
  return L;
}

// Calls row(ptr_offsets, len, inner_strides) over every row of the last merged dim, in pieces. A few long rows are
// cut along the row as well: contiguous operands merge into one row of numel elements, which ran on one thread (the
// residual adds of a Transformer step took as long on two threads as on one). Each element is computed on its own,
// so the cut changes no value.
template <class Row> void for_each_row(const StridedLoop& L, Row&& row) {
  int64_t nd = (int64_t)L.shape.size(), inner = L.shape.back();
  int64_t rows = shape_numel(L.shape) / std::max<int64_t>(inner, 1);
  if (inner == 0 || rows == 0) return;
  const auto& is = L.strides.back();
  const int64_t cuts = rows >= 64 ? 1 : std::clamp<int64_t>(inner / 16384, 1, 64);  // pieces per row
  const int64_t len = cuts == 1 ? inner : ((inner + cuts - 1) / cuts + 15) / 16 * 16;  // a multiple of 16 elements
  parallel_for(rows * cuts, std::max<int64_t>(1, 32768 / len), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; p++) {
      const int64_t r = p / cuts, j0 = p % cuts * len;
      if (j0 >= inner) continue;
      std::array<int64_t, kMaxOps> off{0, 0, 0, 0};
      int64_t rem = r;
      for (int64_t d = nd - 2; d >= 0; d--) {
        int64_t i = rem % L.shape[d];
        rem /= L.shape[d];
        for (int o = 0; o < L.nops; o++) off[o] += i * L.strides[d][o];
      }
      for (int o = 0; o < L.nops; o++) off[o] += j0 * is[o];
      row(off, std::min(len, inner - j0), is);
    }
  });
}

template <class T, class F> Tensor binary_map(const Tensor& a, const Tensor& b, const char* op, F f) {
  if (a.dtype() != b.dtype())
    fail(std::string(op) + ": dtypes differ (" + dtype_name(a.dtype()) + " vs " + dtype_name(b.dtype()) + ")");
  Shape s = broadcast_shapes(a.shape(), b.shape(), op);
  Tensor out = Tensor::empty(s, a.dtype());
  Tensor ea = a.expand(s), eb = b.expand(s);
  StridedLoop L = make_loop(s, {&out, &ea, &eb});
  T *po = out.data<T>(), *pa = ea.data<T>(), *pb = eb.data<T>();
  for_each_row(L, [&](const auto& off, int64_t n, const auto& st) {
    T* o = po + off[0];
    const T *x = pa + off[1], *y = pb + off[2];
    if (st[1] == 1 && st[2] == 1) {  // omp simd: out is a fresh tensor, so no overlap with x, y
#pragma omp simd
      for (int64_t i = 0; i < n; i++) o[i] = f(x[i], y[i]);
    } else if (st[1] == 1 && st[2] == 0) {
      T yv = y[0];
#pragma omp simd
      for (int64_t i = 0; i < n; i++) o[i] = f(x[i], yv);
    } else if (st[1] == 0 && st[2] == 1) {
      T xv = x[0];
#pragma omp simd
      for (int64_t i = 0; i < n; i++) o[i] = f(xv, y[i]);
    } else {
      for (int64_t i = 0; i < n; i++) o[i] = f(x[i * st[1]], y[i * st[2]]);
    }
  });
  return out;
}

template <class T, class F> Tensor unary_map(const Tensor& a, F f) {
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  StridedLoop L = make_loop(a.shape(), {&out, &a});
  T *po = out.data<T>(), *pa = a.data<T>();
  for_each_row(L, [&](const auto& off, int64_t n, const auto& st) {
    T* o = po + off[0];
    const T* x = pa + off[1];
    if (st[1] == 1) {
#pragma omp simd
      for (int64_t i = 0; i < n; i++) o[i] = f(x[i]);
    } else
      for (int64_t i = 0; i < n; i++) o[i] = f(x[i * st[1]]);
  });
  return out;
}

bool on_device(const Tensor& t) { return t.device() != Device::cpu; }

// The device seam of the binary family: operands expanded to the result's shape (views, stride 0 on
// broadcast dims), read in place by the backend.
template <class Op> Tensor device_binary(Op op, const Tensor& a, const Tensor& b, const char* name) {
  if (a.device() != b.device())
    fail(std::string(name) + ": a is on " + device_name(a.device()) + ", b on " + device_name(b.device()));
  if (a.dtype() != b.dtype())
    fail(std::string(name) + ": dtypes differ (" + dtype_name(a.dtype()) + " vs " + dtype_name(b.dtype()) + ")");
  Shape s = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = Tensor::empty(s, a.dtype(), a.device());
  Backend& be = require_backend(a.device(), name);
  if constexpr (std::is_same_v<Op, BinaryOp>) be.binary(op, a.expand(s), b.expand(s), out);
  else be.binary_ext(op, a.expand(s), b.expand(s), out);
  return out;
}

// a (op) s on a device: s becomes a 0-dim tensor of a's dtype on a's device (one scalar copy).
template <class Op> Tensor device_scalar(Op op, const Tensor& a, double s, const char* name) {
  return device_binary(op, a, full({}, s, a.dtype(), a.device()), name);
}

}  // namespace

void copy_into(const Tensor& dst, const Tensor& src) {
  // across devices (a checkpoint loaded into a model on the device, a device result read back): move first
  if (dst.device() != src.device()) return copy_into(dst, src.to(dst.device()));
  if (dst.device() != Device::cpu) {
    Tensor s = src.dtype() == dst.dtype() ? src : src.to(dst.dtype());  // as on the CPU: convert, then copy
    require_backend(dst.device(), "copy_").copy_strided(s.expand(dst.shape()), dst);
    return;
  }
  Tensor s = src.dtype() == dst.dtype() ? src : src.to(dst.dtype());
  Tensor e = s.expand(dst.shape());
  StridedLoop L = make_loop(dst.shape(), {&dst, &e});
  dispatch_all(dst.dtype(), "copy_", [&]<class T>() {
    T *pd = dst.data<T>(), *ps = e.data<T>();
    for_each_row(L, [&](const auto& off, int64_t n, const auto& st) {
      T* d = pd + off[0];
      const T* x = ps + off[1];
      if (st[0] == 1 && st[1] == 1) std::memcpy(d, x, n * sizeof(T));
      else
        for (int64_t i = 0; i < n; i++) d[i * st[0]] = x[i * st[1]];
    });
  });
}

// ---- binary ----
// clang-format off
#define DL_BINARY(NAME, OPENUM, EXPR)                                                       \
  Tensor NAME(const Tensor& a, const Tensor& b) {                                           \
    if (on_device(a) || on_device(b)) return device_binary(BinaryOp::OPENUM, a, b, #NAME);  \
    return dispatch_all(a.dtype(), #NAME, [&]<class T>() {                                  \
      return binary_map<T>(a, b, #NAME, [](T x, T y) { return (T)(EXPR); });               \
    });                                                                                     \
  }
DL_BINARY(add, add, x + y)
DL_BINARY(sub, sub, x - y)
DL_BINARY(mul, mul, x * y)
DL_BINARY(div, div, x / y)
#undef DL_BINARY

#define DL_BINARY_EXT(NAME, EXPR)                                                              \
  Tensor NAME(const Tensor& a, const Tensor& b) {                                              \
    if (on_device(a) || on_device(b)) return device_binary(ExtBinaryOp::NAME, a, b, #NAME);    \
    return dispatch_all(a.dtype(), #NAME, [&]<class T>() {                                     \
      return binary_map<T>(a, b, #NAME, [](T x, T y) { return (T)(EXPR); });                  \
    });                                                                                        \
  }
DL_BINARY_EXT(pow, std::pow(x, y))
DL_BINARY_EXT(maximum, x > y ? x : y)
DL_BINARY_EXT(minimum, x < y ? x : y)
DL_BINARY_EXT(eq, x == y)
DL_BINARY_EXT(ne, x != y)
DL_BINARY_EXT(lt, x < y)
DL_BINARY_EXT(le, x <= y)
DL_BINARY_EXT(gt, x > y)
DL_BINARY_EXT(ge, x >= y)
#undef DL_BINARY_EXT
// clang-format on

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype()) fail("where: dtypes of a and b differ");
  Shape s = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  if (on_device(cond) || on_device(a) || on_device(b)) {  // the device seam: three broadcast views read in place
    if (cond.device() != a.device() || a.device() != b.device())
      fail(std::string("where: cond, a and b must be on one device (") + device_name(cond.device()) + ", " + device_name(a.device()) +
           ", " + device_name(b.device()) + ")");
    Tensor out = Tensor::empty(s, a.dtype(), a.device());
    require_backend(a.device(), "where").where(cond.expand(s), a.expand(s), b.expand(s), out);
    return out;
  }
  Tensor c = cond.to(a.dtype());
  Tensor out = Tensor::empty(s, a.dtype());
  Tensor ec = c.expand(s), ea = a.expand(s), eb = b.expand(s);
  StridedLoop L = make_loop(s, {&out, &ec, &ea, &eb});
  dispatch_all(a.dtype(), "where", [&]<class T>() {
    T *po = out.data<T>(), *pc = ec.data<T>(), *pa = ea.data<T>(), *pb = eb.data<T>();
    for_each_row(L, [&](const auto& off, int64_t n, const auto& st) {
      for (int64_t i = 0; i < n; i++)
        po[off[0] + i] = pc[off[1] + i * st[1]] != 0 ? pa[off[2] + i * st[2]] : pb[off[3] + i * st[3]];
    });
  });
  return out;
}

// ---- scalar ----
Tensor add_scalar(const Tensor& a, double s) {
  if (on_device(a)) return device_scalar(BinaryOp::add, a, s, "add_scalar");
  return dispatch_all(a.dtype(), "add_scalar", [&]<class T>() { return unary_map<T>(a, [s](T x) { return (T)(x + s); }); });
}
Tensor mul_scalar(const Tensor& a, double s) {
  if (on_device(a)) return device_scalar(BinaryOp::mul, a, s, "mul_scalar");
  return dispatch_all(a.dtype(), "mul_scalar", [&]<class T>() { return unary_map<T>(a, [s](T x) { return (T)(x * s); }); });
}
Tensor pow_scalar(const Tensor& a, double p) {
  if (on_device(a)) return p == 2.0 ? mul(a, a) : device_scalar(ExtBinaryOp::pow, a, p, "pow_scalar");
  return dispatch_float(a.dtype(), "pow_scalar", [&]<class T>() {
    if (p == 2.0) return unary_map<T>(a, [](T x) { return x * x; });
    return unary_map<T>(a, [p](T x) { return (T)std::pow(x, (T)p); });
  });
}
Tensor rpow_scalar(double base, const Tensor& a) {
  if (on_device(a)) return device_binary(ExtBinaryOp::pow, full({}, base, a.dtype(), a.device()), a, "rpow_scalar");
  return dispatch_float(a.dtype(), "rpow_scalar",
                        [&]<class T>() { return unary_map<T>(a, [base](T x) { return (T)std::pow((T)base, x); }); });
}
Tensor clamp(const Tensor& a, double lo, double hi) {
  if (lo > hi) fail("clamp: lo " + std::to_string(lo) + " > hi " + std::to_string(hi));
  if (on_device(a)) return device_scalar(ExtBinaryOp::maximum, device_scalar(ExtBinaryOp::minimum, a, hi, "clamp"), lo, "clamp");
  return dispatch_all(a.dtype(), "clamp", [&]<class T>() {
    return unary_map<T>(a, [lo, hi](T x) { return x < (T)lo ? (T)lo : (x > (T)hi ? (T)hi : x); });
  });
}
Tensor masked_fill(const Tensor& a, const Tensor& mask, double value) {
  broadcast_shapes(a.shape(), mask.shape(), "masked_fill");
  if (broadcast_shapes(a.shape(), mask.shape(), "masked_fill") != a.shape())
    fail("masked_fill: mask " + shape_str(mask.shape()) + " must broadcast to the input " + shape_str(a.shape()));
  // a mask built on the host (attention's allowed positions) follows a device input there, as indices do
  const Tensor m = mask.device() == a.device() ? mask : mask.to(a.device());
  return where(m, full({}, value, a.dtype(), a.device()), a);
}

// ---- unary ----
// GELU's erf form and its derivative: gelu_erf_t and gelu_erf_grad_t (tensor/nn_kernels.h), shared with the fused
// feed-forward (autograd/feed_forward.cpp).
template <class T> static T gelu_tanh(T x) {
  const T k = (T)0.7978845608028654;  // sqrt(2/pi)
  return (T)0.5 * x * ((T)1 + std::tanh(k * (x + (T)0.044715 * x * x * x)));
}
template <class T> static T softplus_f(T x) { return x > (T)20 ? x : std::log1p(std::exp(x)); }  // torch's threshold 20

Tensor unary(UnaryOp op, const Tensor& x) {
  if (on_device(x)) {  // the backend reads the view in place
    Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
    require_backend(x.device(), "unary").unary(op, x, out);
    return out;
  }
  return dispatch_float(x.dtype(), "unary", [&]<class T>() {
    switch (op) {
      case UnaryOp::neg: return unary_map<T>(x, [](T v) { return -v; });
      case UnaryOp::exp: return unary_map<T>(x, [](T v) { return std::exp(v); });
      case UnaryOp::log: return unary_map<T>(x, [](T v) { return std::log(v); });
      case UnaryOp::sqrt: return unary_map<T>(x, [](T v) { return std::sqrt(v); });
      case UnaryOp::rsqrt: return unary_map<T>(x, [](T v) { return (T)1 / std::sqrt(v); });
      case UnaryOp::abs: return unary_map<T>(x, [](T v) { return std::abs(v); });
      case UnaryOp::tanh: return unary_map<T>(x, [](T v) { return std::tanh(v); });
      case UnaryOp::sigmoid: return unary_map<T>(x, [](T v) { return sigmoid_t(v); });
      case UnaryOp::relu: return unary_map<T>(x, [](T v) { return v > 0 ? v : (T)0; });
      case UnaryOp::gelu_erf:
        if (x.is_contiguous()) {  // one flat loop, as its backward's: GCC does not inline the lambda into unary_map's
          Tensor y = Tensor::empty(x.shape(), x.dtype());  // row loop, which then makes a call per element
          const T* px = x.data<T>();
          T* py = y.data<T>();
          parallel_for(x.numel(), 32768, [&](int64_t i0, int64_t i1) {
#pragma omp simd
            for (int64_t i = i0; i < i1; i++) py[i] = gelu_erf_t(px[i]);
          });
          return y;
        }
        return unary_map<T>(x, [](T v) { return gelu_erf_t(v); });
      case UnaryOp::gelu_tanh: return unary_map<T>(x, [](T v) { return gelu_tanh(v); });
      case UnaryOp::silu: return unary_map<T>(x, [](T v) { return v * sigmoid_t(v); });
      case UnaryOp::softplus: return unary_map<T>(x, [](T v) { return softplus_f(v); });
    }
    fail("unary: unknown op");
  });
}
Tensor neg(const Tensor& x) { return unary(UnaryOp::neg, x); }
Tensor exp(const Tensor& x) { return unary(UnaryOp::exp, x); }
Tensor log(const Tensor& x) { return unary(UnaryOp::log, x); }
Tensor sqrt(const Tensor& x) { return unary(UnaryOp::sqrt, x); }
Tensor rsqrt(const Tensor& x) { return unary(UnaryOp::rsqrt, x); }
Tensor abs(const Tensor& x) { return unary(UnaryOp::abs, x); }
Tensor tanh(const Tensor& x) { return unary(UnaryOp::tanh, x); }
Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::sigmoid, x); }
Tensor relu(const Tensor& x) { return unary(UnaryOp::relu, x); }
Tensor gelu(const Tensor& x, bool t) { return unary(t ? UnaryOp::gelu_tanh : UnaryOp::gelu_erf, x); }
Tensor silu(const Tensor& x) { return unary(UnaryOp::silu, x); }
Tensor softplus(const Tensor& x) { return unary(UnaryOp::softplus, x); }
// The device seam of sin / cos / sign / elu: one strided kernel reads x in place.
static Tensor device_unary_ext(ExtUnaryOp op, double alpha, const Tensor& x, const char* name) {
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  require_backend(x.device(), name).unary_ext(op, alpha, x, out);
  return out;
}

Tensor elu(const Tensor& x, double alpha) {
  if (on_device(x)) return device_unary_ext(ExtUnaryOp::elu, alpha, x, "elu");
  return dispatch_float(x.dtype(), "elu", [&]<class T>() {
    return unary_map<T>(x, [alpha](T v) { return v > 0 ? v : (T)alpha * std::expm1(v); });
  });
}
Tensor sign(const Tensor& x) {
  if (on_device(x)) return device_unary_ext(ExtUnaryOp::sign, 0, x, "sign");
  return dispatch_all(x.dtype(), "sign", [&]<class T>() { return unary_map<T>(x, [](T v) { return (T)((v > 0) - (v < 0)); }); });
}
Tensor sin(const Tensor& x) {
  if (on_device(x)) return device_unary_ext(ExtUnaryOp::sin, 0, x, "sin");
  return dispatch_float(x.dtype(), "sin", [&]<class T>() { return unary_map<T>(x, [](T v) { return std::sin(v); }); });
}
Tensor cos(const Tensor& x) {
  if (on_device(x)) return device_unary_ext(ExtUnaryOp::cos, 0, x, "cos");
  return dispatch_float(x.dtype(), "cos", [&]<class T>() { return unary_map<T>(x, [](T v) { return std::cos(v); }); });
}

// The derivative of each unary op, written where a reader can check it against the forward above.
Tensor unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& dy) {
  const Tensor& xy = unary_backward_uses_y(op) ? y : x;  // the one the derivative reads (the other may be undefined)
  if (!xy.defined()) fail(std::string("unary_backward: the derivative needs ") + (&xy == &y ? "y" : "x") + ", which is undefined");
  if (on_device(xy) || on_device(dy)) {  // the device seam: one strided kernel over broadcast(x or y, dy)
    if (xy.device() != dy.device()) fail("unary_backward: x/y and dy are on different devices");
    Shape s = broadcast_shapes(xy.shape(), dy.shape(), "unary_backward");
    Tensor dx = Tensor::empty(s, dy.dtype(), dy.device());
    require_backend(dy.device(), "unary_backward").unary_backward(op, xy.expand(s), dy.expand(s), dx);
    return dx;
  }
  return dispatch_float(xy.dtype(), "unary_backward", [&]<class T>() -> Tensor {
    auto with_x = [&](auto f) { return binary_map<T>(x, dy, "unary_backward", f); };
    auto with_y = [&](auto f) { return binary_map<T>(y, dy, "unary_backward", f); };
    switch (op) {
      case UnaryOp::neg: return with_x([](T, T g) { return -g; });
      case UnaryOp::exp: return with_y([](T v, T g) { return g * v; });                       // d exp = exp
      case UnaryOp::log: return with_x([](T v, T g) { return g / v; });                       // d log = 1/x
      case UnaryOp::sqrt: return with_y([](T v, T g) { return g * (T)0.5 / v; });             // 1/(2 sqrt x)
      case UnaryOp::rsqrt: return with_y([](T v, T g) { return g * (T)-0.5 * v * v * v; });   // -x^-1.5 / 2
      case UnaryOp::abs: return with_x([](T v, T g) { return g * (T)((v > 0) - (v < 0)); });  // sign(x)
      case UnaryOp::tanh: return with_y([](T v, T g) { return g * ((T)1 - v * v); });         // 1 - y^2
      case UnaryOp::sigmoid: return with_y([](T v, T g) { return g * v * ((T)1 - v); });      // y (1 - y)
      case UnaryOp::relu: return with_x([](T v, T g) { return v > 0 ? g : (T)0; });
      case UnaryOp::gelu_erf:  // d/dx [x Phi(x)] = Phi(x) + x phi(x)
        if (x.is_contiguous() && dy.is_contiguous() && x.shape() == dy.shape() && x.dtype() == dy.dtype()) {
          // the same formula as below in one flat loop: GCC does not inline this lambda into binary_map's row
          // loop, so that loop makes a call per element and does not vectorise
          Tensor dx = Tensor::empty(x.shape(), x.dtype());
          const T *px = x.data<T>(), *pg = dy.data<T>();
          T* pd = dx.data<T>();
          parallel_for(x.numel(), 32768, [&](int64_t i0, int64_t i1) {
#pragma omp simd
            for (int64_t i = i0; i < i1; i++) pd[i] = pg[i] * gelu_erf_grad_t(px[i]);
          });
          return dx;
        }
        return with_x([](T v, T g) { return g * gelu_erf_grad_t(v); });
      case UnaryOp::gelu_tanh:  // u = k (x + c x^3): d = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) k (1 + 3 c x^2)
        return with_x([](T v, T g) {
          const T k = (T)0.7978845608028654, c = (T)0.044715;
          T t = std::tanh(k * (v + c * v * v * v));
          return g * ((T)0.5 * ((T)1 + t) + (T)0.5 * v * ((T)1 - t * t) * k * ((T)1 + (T)3 * c * v * v));
        });
      case UnaryOp::silu:  // d [x s(x)] = s (1 + x (1 - s))
        return with_x([](T v, T g) {
          T s = sigmoid_t(v);
          return g * s * ((T)1 + v * ((T)1 - s));
        });
      case UnaryOp::softplus: return with_x([](T v, T g) { return v > (T)20 ? g : g * sigmoid_t(v); });
    }
    fail("unary_backward: unknown op");
  });
}

void add_(const Tensor& dst, const Tensor& src) {
  if (dst.device() != Device::cpu) {
    copy_into(dst, add(dst, src));
    return;
  }
  broadcast_shapes(dst.shape(), src.shape(), "add_");
  Tensor s = src.dtype() == dst.dtype() ? src : src.to(dst.dtype());
  Tensor e = s.expand(dst.shape());
  StridedLoop L = make_loop(dst.shape(), {&dst, &e});
  dispatch_all(dst.dtype(), "add_", [&]<class T>() {
    T *pd = dst.data<T>(), *ps = e.data<T>();
    for_each_row(L, [&](const auto& off, int64_t n, const auto& st) {
      T* d = pd + off[0];
      const T* x = ps + off[1];
      if (st[0] == 1 && st[1] == 1) {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) d[i] += x[i];
      } else
        for (int64_t i = 0; i < n; i++) d[i * st[0]] += x[i * st[1]];
    });
  });
}

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  if (broadcast_shapes(shape, g.shape(), "sum_to") != g.shape())
    fail("sum_to: cannot reduce " + shape_str(g.shape()) + " to " + shape_str(shape));
  if (g.device() != Device::cpu) {  // the device seam: a sum over the leading dims and the stretched size-1 dims
    int64_t lead = g.dim() - (int64_t)shape.size();
    Dims dims;
    for (int64_t d = 0; d < g.dim(); d++)
      if (d < lead || (shape[d - lead] == 1 && g.size(d) != 1)) dims.push_back(d);
    return dims.empty() ? g.reshape(shape) : sum(g, dims, true).reshape(shape);
  }
  Tensor out = zeros(shape, g.dtype(), g.device());
  // out viewed with g's shape has stride 0 on every broadcast dim; accumulate row by row, rows in order, so the
  // result is the same for any thread count:
  //   inner dim kept (is[0] != 0): threads own disjoint ranges of inner positions, hence disjoint outputs;
  //   inner dim reduced: each row's sum goes to its own slot in parallel, then the slots are added in row order.
  Tensor ov = out.expand(g.shape());
  Tensor gc = g.contiguous();
  StridedLoop L = make_loop(g.shape(), {&ov, &gc});
  dispatch_all(g.dtype(), "sum_to", [&]<class T>() {
    T *po = ov.data<T>(), *pg = gc.data<T>();
    int64_t nd = (int64_t)L.shape.size(), inner = L.shape.back(), rows = shape_numel(L.shape) / std::max<int64_t>(inner, 1);
    const auto& is = L.strides.back();
    auto row_offsets = [&](int64_t r, int64_t& oo, int64_t& og) {
      oo = 0, og = 0;
      int64_t rem = r;
      for (int64_t d = nd - 2; d >= 0; d--) {
        int64_t i = rem % L.shape[d];
        rem /= L.shape[d];
        oo += i * L.strides[d][0];
        og += i * L.strides[d][1];
      }
    };
    if (is[0] != 0) {
      parallel_for(inner, std::max<int64_t>(16, 32768 / std::max<int64_t>(rows, 1)), [&](int64_t i0, int64_t i1) {
        for (int64_t r = 0; r < rows; r++) {
          int64_t oo, og;
          row_offsets(r, oo, og);
          T* o = po + oo;
          const T* x = pg + og;
          if (is[0] == 1 && is[1] == 1) {
#pragma omp simd
            for (int64_t i = i0; i < i1; i++) o[i] += x[i];
          } else {
            for (int64_t i = i0; i < i1; i++) o[i * is[0]] += x[i * is[1]];
          }
        }
      });
    } else {
      std::vector<T> part(rows);
      parallel_for(rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(inner, 1)), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; r++) {
          int64_t oo, og;
          row_offsets(r, oo, og);
          const T* x = pg + og;
          T acc = 0;
          for (int64_t i = 0; i < inner; i++) acc += x[i * is[1]];
          part[r] = acc;
        }
      });
      for (int64_t r = 0; r < rows; r++) {
        int64_t oo, og;
        row_offsets(r, oo, og);
        po[oo] += part[r];
      }
    }
  });
  return out;
}

}  // namespace dl
