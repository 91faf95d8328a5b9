// optim/adam.h - Adam (Kingma & Ba 2015) with L2 weight decay, and AdamW (Loshchilov & Hutter 2019)
// with decoupled weight decay, exactly as torch.optim.Adam / torch.optim.AdamW (amsgrad=False).
//
// For each parameter p with gradient g, its own step count t (1 on its first update), b1, b2 = beta1, beta2:
//   Adam:   g = g + wd * p                 (L2 decay: added to the gradient, so it is scaled by 1/sqrt(v))
//   AdamW:  p = p * (1 - lr * wd)          (decoupled decay: shrinks p directly, before the Adam step)
//   m = b1 * m + (1 - b1) * g              state "exp_avg"    (zero before the first update)
//   v = b2 * v + (1 - b2) * g * g          state "exp_avg_sq"
//   p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// Note eps is added AFTER the bias correction of sqrt(v), as torch does (not to sqrt(v_hat) + eps with v_hat
// = v/(1-b2^t), which is the same thing written differently, but not to sqrt(v) + eps as the paper's
// "efficient version" does).
// Options (per group): beta1 [0.9], beta2 [0.999], eps [1e-8]. Defaults: Adam wd 0, AdamW wd 0.01.
#pragma once
#include "optim/optimizer.h"

namespace dl::optim {

struct AdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weight_decay = 0;  // Adam: L2; AdamW: decoupled (use AdamWOptions for its 0.01 default)
};
struct AdamWOptions : AdamOptions {
  AdamWOptions() { weight_decay = 0.01; }
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<ParamGroup> groups, const AdamOptions& opt = {});
  Adam(const std::vector<Var>& params, const AdamOptions& opt = {});
  std::string type_name() const override { return decoupled_ ? "AdamW" : "Adam"; }

 protected:
  Adam(std::vector<ParamGroup> groups, const AdamOptions& opt, bool decoupled);
  void update(const ParamGroup& g, Tensor& param, const Tensor& grad, ParamState& s) override;
  void update_group(const ParamGroup& g, std::vector<Pending>& todo) override;  // device: one launch per step count
  std::vector<std::string> buffer_names(const ParamGroup&) const override { return {"exp_avg", "exp_avg_sq"}; }
  bool updates_on_device() const override { return true; }  // the backend's fused adam_step

 private:
  bool decoupled_;
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<ParamGroup> groups, const AdamWOptions& opt = {});
  AdamW(const std::vector<Var>& params, const AdamWOptions& opt = {});
};

}  // namespace dl::optim
