// nn/fused/glu.cpp - the fused gated linear unit (formulas in glu.h).
#include "nn/fused/glu.h"

#include "nn/layers.h"
#include "tensor/nn_kernels.h"  // sigmoid_t: the composed path's sigmoid, element for element

namespace dl::nn {

namespace {

// rows of 2n: y[r, j] = a s, with a = x[r, j], s = sigmoid(x[r, n + j])
template <class T>
void glu_forward(const T* x, T* y, int64_t rows, int64_t n) {
#pragma omp parallel for schedule(static) if (rows * n > (1 << 16))
  for (int64_t r = 0; r < rows; r++) {
    const T *a = x + r * 2 * n, *b = a + n;
    T* yr = y + r * n;
#pragma omp simd
    for (int64_t j = 0; j < n; j++) yr[j] = a[j] * sigmoid_t(b[j]);
  }
}

// dx[r, j] = dy s, dx[r, n + j] = dy a s (1 - s)
template <class T>
void glu_backward(const T* x, const T* dy, T* dx, int64_t rows, int64_t n) {
#pragma omp parallel for schedule(static) if (rows * n > (1 << 16))
  for (int64_t r = 0; r < rows; r++) {
    const T *a = x + r * 2 * n, *b = a + n, *g = dy + r * n;
    T *da = dx + r * 2 * n, *db = da + n;
#pragma omp simd
    for (int64_t j = 0; j < n; j++) {
      const T s = sigmoid_t(b[j]);
      da[j] = g[j] * s;
      db[j] = g[j] * a[j] * s * ((T)1 - s);
    }
  }
}

struct GluNode : Node {
  Tensor x;  // (..., 2n), contiguous
  const char* name() const override { return "glu"; }
  std::vector<Tensor> apply(const Tensor& dy_in) override {
    if (!x.defined()) fail("glu: backward called twice without retain_graph");
    const int64_t n = x.size(-1) / 2, rows = x.numel() / std::max<int64_t>(2 * n, 1);
    Tensor dy = dy_in.to(x.dtype()).contiguous(), dx = Tensor::empty(x.shape(), x.dtype());
    dispatch_float(x.dtype(), "glu", [&]<class T>() { glu_backward<T>(x.data<T>(), dy.data<T>(), dx.data<T>(), rows, n); });
    return {dx};
  }
  void release() override { x = Tensor(); }
};

}  // namespace

Var glu_fused(const Var& xv) {
  const Tensor& xin = xv.data();
  if (xin.dim() < 1 || xin.size(-1) % 2)
    fail("glu: the last dim must be even, found shape " + shape_str(xin.shape()));
  if (xin.device() != Device::cpu || (xin.dtype() != DType::f32 && xin.dtype() != DType::f64))
    fail("glu_fused: float32 or float64 on the CPU only (nn::glu takes the composed path elsewhere)");
  Tensor x = xin.contiguous();
  const int64_t n = x.size(-1) / 2, rows = x.numel() / std::max<int64_t>(2 * n, 1);
  Shape ys = x.shape();
  ys.back() = n;
  Tensor y = Tensor::empty(ys, x.dtype());
  dispatch_float(x.dtype(), "glu", [&]<class T>() { glu_forward<T>(x.data<T>(), y.data<T>(), rows, n); });
  if (!any_requires_grad({xv})) return Var(y);
  auto node = std::make_shared<GluNode>();
  node->x = x;
  return record(node, y, {xv});
}

Var glu_fast(const Var& x) {
  const Tensor& t = x.data();
  if (t.device() == Device::cpu && (t.dtype() == DType::f32 || t.dtype() == DType::f64)) return glu_fused(x);
  return glu(x);  // the composed twin: device ops
}

}  // namespace dl::nn
