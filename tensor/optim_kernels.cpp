// tensor/optim_kernels.cpp - the fused Adam/AdamW step and the sum of squares (see optim_kernels.h): one tight loop
// over contiguous buffers on the CPU; on a device, the backend's adam_step / sum_sq run the same loop there
// (cuda/ops/optim.cuh).
#include "tensor/optim_kernels.h"

#include <cmath>
#include <string>

#include "tensor/backend.h"
#include "tensor/elementwise.h"

namespace dl {

// The gradient and the moments: contiguous, with the parameter's shape, dtype and device.
static void check_adam_operands(const char* op, const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v) {
  for (const Tensor* t : {&grad, &m, &v})
    if (t->shape() != param.shape() || t->dtype() != param.dtype() || t->device() != param.device() || !t->is_contiguous())
      fail(std::string(op) + ": the gradient and the moments must be contiguous " + shape_str(param.shape()) + " " +
           dtype_name(param.dtype()) + " on " + device_name(param.device()) + " like the parameter, got " +
           shape_str(t->shape()) + " " + dtype_name(t->dtype()) + " on " + device_name(t->device()));
}

void adam_step_(const AdamScalars& s, const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v) {
  const char* op = s.decoupled ? "AdamW" : "Adam";
  check_adam_operands(op, param, grad, m, v);
  if (param.device() != Device::cpu) return require_backend(param.device(), op).adam_step(s, param, grad, m, v);
  const bool l2 = !s.decoupled && s.weight_decay != 0, decay = s.decoupled && s.weight_decay != 0;
  dispatch_float(param.dtype(), op, [&]<class T>() {
    T* p = param.data<T>();
    const T* gr = grad.data<T>();
    T* pm = m.data<T>();
    T* pv = v.data<T>();
    const T tb1 = (T)s.beta1, tb2 = (T)s.beta2, c1 = (T)(1 - s.beta1), c2 = (T)(1 - s.beta2), teps = (T)s.eps;
    const T twd = (T)s.weight_decay, tstep = (T)s.step_size, tbc2 = (T)s.bc2_sqrt, tshrink = (T)s.shrink;
    // 16K floats of Adam are ~10 us of work: below that, waking the second thread costs more than it saves.
    // omp simd: element i reads and writes only index i of the four arrays (the optimizer's own tensors, which do not
    // overlap at an offset); the compiler could not assume it, so the loop ran one element at a time with a call to
    // sqrtf each. Vectorised it does the same operations per element: the same bits.
    parallel_for(param.numel(), 1 << 14, [&](int64_t i0, int64_t i1) {
#pragma omp simd
      for (int64_t i = i0; i < i1; i++) {
        T gi = gr[i];
        if (l2) gi += twd * p[i];
        if (decay) p[i] *= tshrink;
        pm[i] = tb1 * pm[i] + c1 * gi;
        pv[i] = tb2 * pv[i] + c2 * gi * gi;
        T denom = std::sqrt(pv[i]) / tbc2 + teps;
        p[i] -= tstep * (pm[i] / denom);
      }
    });
  });
}

double sum_of_squares(const Tensor& g0) {
  Tensor g = g0.contiguous();
  if (g.device() != Device::cpu) return require_backend(g.device(), "sum_of_squares").sum_sq(g);
  return dispatch_float(g.dtype(), "sum_of_squares", [&]<class T>() {
    const T* p = g.data<T>();
    double acc = 0;
    for (int64_t i = 0, n = g.numel(); i < n; i++) acc += (double)p[i] * (double)p[i];
    return acc;
  });
}

void adam_steps_(const AdamScalars& s, const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                 const std::vector<Tensor>& m, const std::vector<Tensor>& v) {
  const char* op = s.decoupled ? "AdamW" : "Adam";
  if (grads.size() != params.size() || m.size() != params.size() || v.size() != params.size())
    fail(std::string(op) + ": " + std::to_string(params.size()) + " parameters but " + std::to_string(grads.size()) +
         " gradients and " + std::to_string(m.size()) + " / " + std::to_string(v.size()) + " moments");
  if (params.empty()) return;
  const Device d = params[0].device();
  bool one_device = d != Device::cpu;
  for (size_t i = 0; i < params.size(); i++) {
    if (params[i].device() != d || params[i].dtype() != params[0].dtype()) one_device = false;
    check_adam_operands(op, params[i], grads[i], m[i], v[i]);  // every tensor, before any update
  }
  if (one_device) return require_backend(d, op).adam_steps(s, params, grads, m, v);
  for (size_t i = 0; i < params.size(); i++) adam_step_(s, params[i], grads[i], m[i], v[i]);
}

double sum_of_squares_all(const std::vector<Tensor>& gs) {
  std::vector<Tensor> dev;  // the device tensors of one dtype go together; the rest one by one
  double acc = 0;
  for (const Tensor& g : gs) {
    if (g.device() != Device::cpu && (dev.empty() || (g.device() == dev[0].device() && g.dtype() == dev[0].dtype())))
      dev.push_back(g.contiguous());
    else acc += sum_of_squares(g);
  }
  if (!dev.empty()) acc += require_backend(dev[0].device(), "sum_of_squares").sum_sq_all(dev);
  return acc;
}

}  // namespace dl
