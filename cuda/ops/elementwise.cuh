// cuda/ops/elementwise.cuh - device elementwise ops as Thrust functors: the strided copy, dtype casts,
// every UnaryOp and its derivative, sin / cos / sign / elu (ExtUnaryOp, forward only: autograd composes their
// derivatives from these and the binary ops), the broadcasting binary family (add .. div, pow, maximum, minimum,
// comparisons) and where.
//
// Each launch function takes tensors (for their raw pointers, shapes and strides) and an execution
// policy: thrust::cuda::par_nosync in cuda/ops_elementwise.cu, thrust::cpp::par in tests/cuda_logic/. Inputs are
// any views with the output's shape (the caller in tensor/ expands broadcast operands, which gives them
// stride 0); outputs are contiguous except for copy_strided, whose destination may be any view too.
// The formulas are those of tensor/elementwise.cpp; the CPU is the reference they are tested against.
// Float32 gelu uses erff here and the CPU's erf_fast there: they agree to ~2e-7 absolute.
#pragma once
#include "cuda/ops/common.cuh"
#include "tensor/backend.h"

namespace dl::ops {

// ---------------------------------------------------------------------------------------------
// dst[dst_map(i)] = src[src_map(i)]: contiguous(), clone() and copy_ of any view on the device.
template <class T> struct CopyF {
  const T* src;
  T* dst;
  Strided s, d;
  DL_HD void operator()(int64_t i) const { dst[d.offset(i)] = src[s.offset(i)]; }
};

template <class Exec> void copy_strided(const Exec& exec, const Tensor& src, const Tensor& dst) {
  std::vector<Strided> L = joint_layout(dst.shape(), {&src, &dst}, "copy_");
  dispatch_all(dst.dtype(), "copy_ (cuda)", [&]<class T>() {
    for_n(exec, dst.numel(), CopyF<T>{dptr<T>(src), dptr<T>(dst), L[0], L[1]});
  });
}

// dst = (D) src: to(dtype) on the device; src any view with dst's shape, dst contiguous.
template <class S, class D> struct CastF {
  const S* src;
  D* dst;
  Strided s;
  DL_HD void operator()(int64_t i) const { dst[i] = (D)src[s.offset(i)]; }
};

template <class Exec> void cast(const Exec& exec, const Tensor& src, const Tensor& dst) {
  std::vector<Strided> L = joint_layout(dst.shape(), {&src}, "to(dtype)");
  dispatch_all(src.dtype(), "to(dtype) (cuda)", [&]<class S>() {
    dispatch_all(dst.dtype(), "to(dtype) (cuda)", [&]<class D>() {
      for_n(exec, dst.numel(), CastF<S, D>{dptr<S>(src), dptr<D>(dst), L[0]});
    });
  });
}

// ---------------------------------------------------------------------------------------------
// y = op(x), formulas of tensor/elementwise.cpp's unary().
template <class T> DL_HD inline T unary_value(UnaryOp op, T v) {
  switch (op) {
    case UnaryOp::neg: return -v;
    case UnaryOp::exp: return m_exp(v);
    case UnaryOp::log: return m_log(v);
    case UnaryOp::sqrt: return m_sqrt(v);
    case UnaryOp::rsqrt: return (T)1 / m_sqrt(v);
    case UnaryOp::abs: return m_abs(v);
    case UnaryOp::tanh: return m_tanh(v);
    case UnaryOp::sigmoid: return m_sigmoid(v);
    case UnaryOp::relu: return v > (T)0 ? v : (T)0;
    case UnaryOp::gelu_erf: return (T)0.5 * v * ((T)1 + m_erf(v * (T)0.70710678118654752440));
    case UnaryOp::gelu_tanh: {
      const T k = (T)0.7978845608028654;  // sqrt(2/pi)
      return (T)0.5 * v * ((T)1 + m_tanh(k * (v + (T)0.044715 * v * v * v)));
    }
    case UnaryOp::silu: return v * m_sigmoid(v);
    case UnaryOp::softplus: return v > (T)20 ? v : m_log1p(m_exp(v));  // torch's threshold 20
  }
  return v;
}

// dx = op'(x) dy, with v = y for the ops where unary_backward_uses_y(op) (tensor/backend.h), else v = x.
template <class T> DL_HD inline T unary_derivative(UnaryOp op, T v, T g) {
  switch (op) {
    case UnaryOp::neg: return -g;
    case UnaryOp::exp: return g * v;                              // d exp = exp = y
    case UnaryOp::log: return g / v;                              // 1/x
    case UnaryOp::sqrt: return g * (T)0.5 / v;                    // 1/(2 y)
    case UnaryOp::rsqrt: return g * (T)-0.5 * v * v * v;          // -y^3 / 2
    case UnaryOp::abs: return g * (T)((v > (T)0) - (v < (T)0));   // sign(x)
    case UnaryOp::tanh: return g * ((T)1 - v * v);                // 1 - y^2
    case UnaryOp::sigmoid: return g * v * ((T)1 - v);             // y (1 - y)
    case UnaryOp::relu: return v > (T)0 ? g : (T)0;
    case UnaryOp::gelu_erf: {  // d/dx [x Phi(x)] = Phi(x) + x phi(x)
      T cdf = (T)0.5 * ((T)1 + m_erf(v * (T)0.70710678118654752440));
      T pdf = m_exp((T)-0.5 * v * v) * (T)0.3989422804014327;
      return g * (cdf + v * pdf);
    }
    case UnaryOp::gelu_tanh: {  // u = k (x + c x^3): 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) k (1 + 3 c x^2)
      const T k = (T)0.7978845608028654, c = (T)0.044715;
      T t = m_tanh(k * (v + c * v * v * v));
      return g * ((T)0.5 * ((T)1 + t) + (T)0.5 * v * ((T)1 - t * t) * k * ((T)1 + (T)3 * c * v * v));
    }
    case UnaryOp::silu: {  // d [x s(x)] = s (1 + x (1 - s))
      T s = m_sigmoid(v);
      return g * s * ((T)1 + v * ((T)1 - s));
    }
    case UnaryOp::softplus: return v > (T)20 ? g : g * m_sigmoid(v);
  }
  return g;
}

template <class T> struct UnaryF {
  UnaryOp op;
  const T* x;
  T* out;
  Strided sx;
  DL_HD void operator()(int64_t i) const { out[i] = unary_value(op, x[sx.offset(i)]); }
};

template <class T> struct UnaryBackwardF {
  UnaryOp op;
  const T *v, *dy;
  T* dx;
  Strided sv, sg;
  DL_HD void operator()(int64_t i) const { dx[i] = unary_derivative(op, v[sv.offset(i)], dy[sg.offset(i)]); }
};

template <class Exec> void unary(const Exec& exec, UnaryOp op, const Tensor& x, const Tensor& out) {
  std::vector<Strided> L = joint_layout(out.shape(), {&x}, "unary");
  dispatch_float(x.dtype(), "unary (cuda)", [&]<class T>() {
    for_n(exec, out.numel(), UnaryF<T>{op, dptr<T>(x), dptr<T>(out), L[0]});
  });
}

// xy is y = op(x) when unary_backward_uses_y(op), else x; xy and dy have dx's shape (expanded).
template <class Exec> void unary_backward(const Exec& exec, UnaryOp op, const Tensor& xy, const Tensor& dy, const Tensor& dx) {
  std::vector<Strided> L = joint_layout(dx.shape(), {&xy, &dy}, "unary_backward");
  dispatch_float(dx.dtype(), "unary_backward (cuda)", [&]<class T>() {
    for_n(exec, dx.numel(), UnaryBackwardF<T>{op, dptr<T>(xy), dptr<T>(dy), dptr<T>(dx), L[0], L[1]});
  });
}

// ---------------------------------------------------------------------------------------------
// sin, cos, elu (float) and sign (any dtype), as tensor/elementwise.cpp's unary_map lambdas.
template <class T> struct UnaryExtF {
  ExtUnaryOp op;
  T alpha;
  const T* x;
  T* out;
  Strided sx;
  DL_HD void operator()(int64_t i) const {
    T v = x[sx.offset(i)];
    switch (op) {
      case ExtUnaryOp::sin: out[i] = m_sin(v); return;
      case ExtUnaryOp::cos: out[i] = m_cos(v); return;
      case ExtUnaryOp::elu: out[i] = v > (T)0 ? v : alpha * m_expm1(v); return;
      case ExtUnaryOp::sign: out[i] = (T)((v > (T)0) - (v < (T)0)); return;
    }
  }
};

template <class T> struct SignF {
  const T* x;
  T* out;
  Strided sx;
  DL_HD void operator()(int64_t i) const {
    T v = x[sx.offset(i)];
    out[i] = (T)((v > (T)0) - (v < (T)0));
  }
};

// x any view with out's shape; out contiguous. sign takes i64 too; the others f32 / f64.
template <class Exec> void unary_ext(const Exec& exec, ExtUnaryOp op, double alpha, const Tensor& x, const Tensor& out) {
  std::vector<Strided> L = joint_layout(out.shape(), {&x}, "unary_ext");
  if (op == ExtUnaryOp::sign)
    return dispatch_all(x.dtype(), "sign (cuda)", [&]<class T>() {
      for_n(exec, out.numel(), SignF<T>{dptr<T>(x), dptr<T>(out), L[0]});
    });
  dispatch_float(x.dtype(), "unary_ext (cuda)", [&]<class T>() {
    for_n(exec, out.numel(), UnaryExtF<T>{op, (T)alpha, dptr<T>(x), dptr<T>(out), L[0]});
  });
}

// ---------------------------------------------------------------------------------------------
// out = a (op) b. One code for both enums of tensor/backend.h: BinaryOp (add .. div) and ExtBinaryOp.
enum class BinaryCode : int { add, sub, mul, div, pow, maximum, minimum, eq, ne, lt, le, gt, ge };
inline BinaryCode binary_code(BinaryOp op) { return (BinaryCode)(int)op; }
inline BinaryCode binary_code(ExtBinaryOp op) { return (BinaryCode)((int)BinaryCode::pow + (int)op); }

template <class T> DL_HD inline T binary_value(BinaryCode op, T x, T y) {
  switch (op) {
    case BinaryCode::add: return x + y;
    case BinaryCode::sub: return x - y;
    case BinaryCode::mul: return x * y;
    case BinaryCode::div: return x / y;
    case BinaryCode::pow: return m_pow(x, y);
    case BinaryCode::maximum: return x > y ? x : y;
    case BinaryCode::minimum: return x < y ? x : y;
    case BinaryCode::eq: return (T)(x == y);
    case BinaryCode::ne: return (T)(x != y);
    case BinaryCode::lt: return (T)(x < y);
    case BinaryCode::le: return (T)(x <= y);
    case BinaryCode::gt: return (T)(x > y);
    case BinaryCode::ge: return (T)(x >= y);
  }
  return x;
}

template <class T> struct BinaryF {
  BinaryCode op;
  const T *a, *b;
  T* out;
  Strided sa, sb;
  DL_HD void operator()(int64_t i) const { out[i] = binary_value(op, a[sa.offset(i)], b[sb.offset(i)]); }
};

// a and b are views with out's shape (broadcast dims have stride 0); out is contiguous and may alias neither
// unless it is identical to one (x = x + y elementwise is fine: each element reads before it writes).
template <class Exec> void binary(const Exec& exec, BinaryCode op, const Tensor& a, const Tensor& b, const Tensor& out) {
  std::vector<Strided> L = joint_layout(out.shape(), {&a, &b}, "binary");
  dispatch_all(out.dtype(), "binary (cuda)", [&]<class T>() {
    for_n(exec, out.numel(), BinaryF<T>{op, dptr<T>(a), dptr<T>(b), dptr<T>(out), L[0], L[1]});
  });
}

// ---------------------------------------------------------------------------------------------
// out = cond != 0 ? a : b, cond read in a's dtype as the CPU converts it (so 0.5 is false for i64 a).
template <class C, class T> struct WhereF {
  const C* c;
  const T *a, *b;
  T* out;
  Strided sc, sa, sb;
  DL_HD void operator()(int64_t i) const { out[i] = (T)c[sc.offset(i)] != (T)0 ? a[sa.offset(i)] : b[sb.offset(i)]; }
};

// cond, a, b: views with out's shape (expanded); a, b and out share a dtype, cond has any.
template <class Exec> void where(const Exec& exec, const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  std::vector<Strided> L = joint_layout(out.shape(), {&cond, &a, &b}, "where");
  dispatch_all(cond.dtype(), "where (cuda)", [&]<class C>() {
    dispatch_all(out.dtype(), "where (cuda)", [&]<class T>() {
      for_n(exec, out.numel(), WhereF<C, T>{dptr<C>(cond), dptr<T>(a), dptr<T>(b), dptr<T>(out), L[0], L[1], L[2]});
    });
  });
}

}  // namespace dl::ops
