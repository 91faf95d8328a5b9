// optim/sgd.h - stochastic gradient descent with momentum, dampening, Nesterov and L2 weight decay,
// exactly as torch.optim.SGD (PyTorch 1.13/2.x, maximize=False).
//
// For each parameter p with gradient g (wd = weight_decay, mu = momentum, tau = dampening):
//   d = g + wd * p                                     (L2 decay: added to the gradient)
//   if mu != 0:
//     buf = d                          on this parameter's first update
//     buf = mu * buf + (1 - tau) * d   afterwards
//     d   = nesterov ? d + mu * buf : buf
//   p -= lr * d
// Options (per group, defaults in brackets): momentum [0], dampening [0], nesterov [0; 1 = on].
// Nesterov needs momentum > 0 and dampening 0 (as torch). State buffer: "momentum_buffer" (only when mu != 0).
#pragma once
#include "optim/optimizer.h"

namespace dl::optim {

struct SGDOptions {
  double lr = 1e-3;  // torch has no default; a required value in configs
  double momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
};

class SGD : public Optimizer {
 public:
  // Every group's unset options default to `opt`; the groups keep their own lr and weight_decay.
  SGD(std::vector<ParamGroup> groups, const SGDOptions& opt = {});
  // One group over `params` with lr and weight decay from `opt`.
  SGD(const std::vector<Var>& params, const SGDOptions& opt);
  std::string type_name() const override { return "SGD"; }

 protected:
  void update(const ParamGroup& g, Tensor& param, const Tensor& grad, ParamState& s) override;
  std::vector<std::string> buffer_names(const ParamGroup& g) const override;
};

}  // namespace dl::optim
