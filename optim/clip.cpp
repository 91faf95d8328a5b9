// optim/clip.cpp - see clip.h.
#include "optim/clip.h"

#include <cmath>

#include "optim/optimizer.h"
#include "tensor/optim_kernels.h"
#include "tensor/elementwise.h"
#include "tensor/reduce.h"

namespace dl::optim {

// sum |g|^q (or max |g| for q = inf) over one tensor, in double
static double partial_norm(const Tensor& g0, double q) {
  Tensor g = g0.contiguous();
  if (g.device() != Device::cpu) {        // other norms from device reductions
    Tensor a = abs(g).to(DType::f64);
    if (std::isinf(q)) return g.numel() ? amax(a, {}, false).item() : 0.0;
    return sum(q == 1 ? a : pow_scalar(a, q)).item();
  }
  return dispatch_float(g.dtype(), "clip_grad_norm", [&]<class T>() {
    const T* p = g.data<T>();
    double acc = 0;
    int64_t n = g.numel();
    if (std::isinf(q)) {
      for (int64_t i = 0; i < n; i++) acc = std::max(acc, (double)std::abs(p[i]));
    } else if (q == 1) {
      for (int64_t i = 0; i < n; i++) acc += std::abs((double)p[i]);
    } else {
      for (int64_t i = 0; i < n; i++) acc += std::pow(std::abs((double)p[i]), q);
    }
    return acc;
  });
}

double grad_norm(const std::vector<Var>& params, double q) {
  if (!(q > 0)) fail("grad_norm: norm_type must be > 0 (or inf), got " + std::to_string(q));
  double acc = 0;
  if (q == 2) {  // one sum over every gradient: on a device one launch and one read back (sum_of_squares_all)
    std::vector<Tensor> gs;
    for (auto& v : params)
      if (v.defined() && v.grad().defined()) gs.push_back(v.grad());
    return std::sqrt(sum_of_squares_all(gs));
  }
  for (auto& v : params) {
    if (!v.defined() || !v.grad().defined()) continue;
    double a = partial_norm(v.grad(), q);
    acc = std::isinf(q) ? std::max(acc, a) : acc + a;
  }
  if (std::isinf(q)) return acc;
  return q == 2 ? std::sqrt(acc) : q == 1 ? acc : std::pow(acc, 1.0 / q);
}

void scale_grads(const std::vector<Var>& params, double factor) {
  for (auto& v : params) {
    if (!v.defined() || !v.grad().defined()) continue;
    Tensor& g = v.mutable_grad();
    if (!g.is_contiguous() || g.device() != Device::cpu) {
      copy_into(g, mul_scalar(g, factor));
      continue;
    }
    dispatch_float(g.dtype(), "scale_grads", [&]<class T>() {
      T* p = g.data<T>();
      const T f = (T)factor;
      parallel_chunks(g.numel(), [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; i++) p[i] *= f;
      });
    });
  }
}

double clip_grad_norm(const std::vector<Var>& params, double max_norm, double q, bool error_if_nonfinite) {
  double total = grad_norm(params, q);
  if (error_if_nonfinite && !std::isfinite(total))
    fail("clip_grad_norm: the total gradient norm is " + std::to_string(total) +
         " (set error_if_nonfinite = false to clip anyway)");
  double coef = max_norm / (total + 1e-6);
  if (!(coef >= 1)) scale_grads(params, coef);  // a NaN total makes NaN gradients, as in torch
  return total;
}

GradAccumulation::GradAccumulation(int k) : k_(k) {
  if (k < 1) fail("GradAccumulation: k must be >= 1, got " + std::to_string(k));
}
bool GradAccumulation::micro_batch_done() {
  if (++pending_ < k_) return false;
  pending_ = 0;
  return true;
}
void GradAccumulation::set_pending(int n) {
  if (n < 0 || n >= k_) fail("GradAccumulation: pending " + std::to_string(n) + " outside [0, " + std::to_string(k_) + ")");
  pending_ = n;
}

}  // namespace dl::optim
