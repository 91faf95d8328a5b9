// optim/adam.cpp - the Adam/AdamW update: the state and the step's scalars here; the update itself is the fused
// tensor op adam_step_ (tensor/optim_kernels.h: one loop on the CPU, the same loop on a device).
#include "optim/adam.h"

#include <cmath>

#include "tensor/optim_kernels.h"

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
  adam_step_(AdamScalars{b1, b2, eps, wd, step_size, bc2_sqrt, shrink, decoupled_}, param, grad, s.buffers["exp_avg"],
             s.buffers["exp_avg_sq"]);
}

}  // namespace dl::optim
