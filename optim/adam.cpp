// optim/adam.cpp - the Adam/AdamW update: the state and the step's scalars here; the update itself is the fused
// tensor op adam_step_ (tensor/optim_kernels.h: one loop on the CPU, the same loop on a device).
#include "optim/adam.h"

#include <cmath>
#include <map>
#include <tuple>

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

// The step's scalars for a parameter at its step count t, in double as torch computes them in Python floats.
static AdamScalars adam_scalars(double b1, double b2, double eps, const ParamGroup& g, int64_t step, bool decoupled) {
  const double t = (double)step, lr = g.lr, wd = g.weight_decay;
  return AdamScalars{b1, b2, eps, wd, lr / (1 - std::pow(b1, t)), std::sqrt(1 - std::pow(b2, t)), 1 - lr * wd, decoupled};
}

static void ensure_moments(const Tensor& param, std::map<std::string, Tensor>& buffers) {
  if (buffers.count("exp_avg")) return;  // the moments live on the parameter's device
  buffers["exp_avg"] = zeros(param.shape(), param.dtype(), param.device());
  buffers["exp_avg_sq"] = zeros(param.shape(), param.dtype(), param.device());
}

void Adam::update(const ParamGroup& g, Tensor& param, const Tensor& grad, ParamState& s) {
  ensure_moments(param, s.buffers);
  adam_step_(adam_scalars(option(g, "beta1"), option(g, "beta2"), option(g, "eps"), g, s.step, decoupled_), param, grad,
             s.buffers["exp_avg"], s.buffers["exp_avg_sq"]);
}

// Device parameters of one (device, dtype, step count) go to adam_steps_ together: one launch for a whole model whose
// parameters all train every step. CPU parameters are updated one by one (each loop already runs on both cores).
void Adam::update_group(const ParamGroup& g, std::vector<Pending>& todo) {
  std::map<std::tuple<Device, DType, int64_t>, std::vector<Pending*>> batches;
  for (Pending& u : todo) {
    if (u.param->device() == Device::cpu) update(g, *u.param, u.grad, *u.state);
    else batches[{u.param->device(), u.param->dtype(), u.state->step}].push_back(&u);
  }
  for (auto& [key, us] : batches) {
    std::vector<Tensor> params, grads, m, v;
    for (Pending* u : us) {
      ensure_moments(*u->param, u->state->buffers);
      params.push_back(*u->param), grads.push_back(u->grad);
      m.push_back(u->state->buffers["exp_avg"]), v.push_back(u->state->buffers["exp_avg_sq"]);
    }
    adam_steps_(adam_scalars(option(g, "beta1"), option(g, "beta2"), option(g, "eps"), g, std::get<2>(key), decoupled_),
                params, grads, m, v);
  }
}

}  // namespace dl::optim
