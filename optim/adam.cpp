// optim/adam.cpp - the Adam/AdamW update as one tight loop over contiguous buffers (formula in adam.h); on a
// device, the backend's fused adam_step runs the same loop there.
#include "optim/adam.h"

#include <cmath>

#include "tensor/backend.h"

namespace dl::optim {

static std::map<std::string, double> adam_defaults(const AdamOptions& o) {
  return {{"beta1", o.beta1}, {"beta2", o.beta2}, {"eps", o.eps}};
}

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& opt, bool decoupled)
    : Optimizer(std::move(groups), adam_defaults(opt)), decoupled_(decoupled) {
  for (auto& g : groups_) {
    double b1 = option(g, "beta1"), b2 = option(g, "beta2");
    if (!(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1))
      fail(type_name() + ": group '" + g.name + "' needs 0 <= beta < 1, got beta1 " + std::to_string(b1) + ", beta2 " +
           std::to_string(b2));
    if (option(g, "eps") < 0) fail(type_name() + ": group '" + g.name + "' has a negative eps");
  }
}
Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& opt) : Adam(std::move(groups), opt, false) {}
Adam::Adam(const std::vector<Var>& params, const AdamOptions& opt)
    : Adam(std::vector<ParamGroup>{make_group(params, opt.lr, opt.weight_decay)}, opt, false) {}

AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& opt) : Adam(std::move(groups), opt, true) {}
AdamW::AdamW(const std::vector<Var>& params, const AdamWOptions& opt)
    : Adam(std::vector<ParamGroup>{make_group(params, opt.lr, opt.weight_decay)}, opt, true) {}

void Adam::update(const ParamGroup& g, Tensor& param, const Tensor& grad, ParamState& s) {
  const double b1 = option(g, "beta1"), b2 = option(g, "beta2"), eps = option(g, "eps");
  const double lr = g.lr, wd = g.weight_decay;
  if (!s.buffers.count("exp_avg")) {  // the moments live on the parameter's device
    s.buffers["exp_avg"] = zeros(param.shape(), param.dtype(), param.device());
    s.buffers["exp_avg_sq"] = zeros(param.shape(), param.dtype(), param.device());
  }
  // scalars in double, as torch computes them in Python floats
  const double t = (double)s.step;
  const double step_size = lr / (1 - std::pow(b1, t));
  const double bc2_sqrt = std::sqrt(1 - std::pow(b2, t));
  const double shrink = 1 - lr * wd;
  const bool l2 = !decoupled_ && wd != 0, decay = decoupled_ && wd != 0;
  if (param.device() != Device::cpu) {  // the device seam: the same loop as one fused kernel (cuda/ops/optim.cuh)
    AdamScalars sc{b1, b2, eps, wd, step_size, bc2_sqrt, shrink, decoupled_};
    require_backend(param.device(), type_name().c_str()).adam_step(sc, param, grad, s.buffers["exp_avg"], s.buffers["exp_avg_sq"]);
    return;
  }
  dispatch_float(param.dtype(), type_name().c_str(), [&]<class T>() {
    T* p = param.data<T>();
    const T* gr = grad.data<T>();
    T* m = s.buffers["exp_avg"].data<T>();
    T* v = s.buffers["exp_avg_sq"].data<T>();
    const T tb1 = (T)b1, tb2 = (T)b2, c1 = (T)(1 - b1), c2 = (T)(1 - b2), teps = (T)eps, twd = (T)wd;
    const T tstep = (T)step_size, tbc2 = (T)bc2_sqrt, tshrink = (T)shrink;
    parallel_chunks(param.numel(), [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; i++) {
        T gi = gr[i];
        if (l2) gi += twd * p[i];
        if (decay) p[i] *= tshrink;
        m[i] = tb1 * m[i] + c1 * gi;
        v[i] = tb2 * v[i] + c2 * gi * gi;
        T denom = std::sqrt(v[i]) / tbc2 + teps;
        p[i] -= tstep * (m[i] / denom);
      }
    });
  });
}

}  // namespace dl::optim
