// optim/optimizer.h - the base of every optimiser: parameter groups, step(), zero_grad(), learning rates,
// and the optimiser state (moments, step counts) as named Tensors plus a JSON string of scalars.
//
// +------------------------------------------------------------------------------------------------+
// | An optimiser holds the SAME Vars as the Module (Var copies share their VarImpl), and step()      |
// | writes the new values into each parameter's existing storage. Views of a parameter and the      |
// | Module therefore see every update; no parameter is ever re-allocated.                           |
// +------------------------------------------------------------------------------------------------+
//
// A parameter group is a list of (name, Var) with its own lr, weight_decay and optimiser options
// (e.g. {"momentum": 0.9}); options a group does not set fall back to the optimiser's defaults. Names are
// the Module's dotted names (make_param_groups in optim/param_groups.h) and key the saved state:
// "<param name>.exp_avg", "<param name>.exp_avg_sq", "<param name>.momentum_buffer".
//
// Parameters whose grad is undefined at step() (frozen, or unused this step) are skipped entirely: their
// values, moments and per-parameter step count stay as they were (as torch.optim does).
//
// What it is not: a scheduler (optim/schedule.h sets lr), a clipper (optim/clip.h), or a closure-based API.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "autograd/variable.h"

namespace dl::optim {

struct NamedParam {
  std::string name;  // unique across the optimiser; empty names are filled with "param<k>" (k counts all groups)
  Var var;
};

struct ParamGroup {
  std::string name = "default";  // for messages and the saved state ("default", "no_decay", "ssm", ...)
  std::vector<NamedParam> params;
  double lr = 1e-3;     // the current learning rate (schedules overwrite it every step)
  double base_lr = -1;  // the configured lr schedules scale; < 0 means "set to lr at construction"
  double weight_decay = 0;
  std::map<std::string, double> options;  // per-optimiser overrides, e.g. {"momentum", 0.9}, {"beta2", 0.98}
};

// A single group over unnamed parameters (names "param0", "param1", ...).
ParamGroup make_group(const std::vector<Var>& params, double lr, double weight_decay = 0);

// The serialisable optimiser state. `tensors` holds one entry per (parameter, buffer): "<param>.<buffer>";
// `json` holds everything scalar: optimiser type, step count, groups (name, lr, base_lr, weight_decay,
// options, parameter names) and each parameter's own step count.
struct OptimizerState {
  std::map<std::string, Tensor> tensors;
  std::string json;
};

class Optimizer {
 public:
  // `defaults` lists every option this optimiser understands with its default value; a group option not
  // in that list is an error naming the known ones.
  Optimizer(std::vector<ParamGroup> groups, std::map<std::string, double> defaults);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  virtual std::string type_name() const = 0;

  // One update of every parameter that has a gradient. Gradients are read, never modified.
  void step();
  // Drop every parameter's gradient (set to undefined, like torch's set_to_none=True).
  void zero_grad();

  size_t num_groups() const { return groups_.size(); }
  const ParamGroup& group(size_t g) const;
  ParamGroup& group(size_t g);
  double lr(size_t g = 0) const { return group(g).lr; }
  void set_lr(size_t g, double lr) { group(g).lr = lr; }
  void set_lr(double lr);                                            // every group
  double option(const ParamGroup& g, const std::string& key) const;  // group override or default
  int64_t step_count() const { return step_count_; }                 // number of step() calls so far
  std::vector<NamedParam> all_params() const;

  // The state, sharing nothing mutable: tensors are clones of the moments.
  OptimizerState state_dict() const;
  // Restores moments, step counts and each group's lr/base_lr. The groups' structure (names, parameter
  // names and shapes) must match what was saved; every parameter with saved state must have all of its
  // buffers. Errors name the parameter and the missing or mis-shaped buffer. Hyperparameters other than
  // the learning rates (weight decay, betas, momentum) come from the constructor, i.e. from the config.
  void load_state_dict(const OptimizerState& s);
  // Forget the state (moments, step counts) of every parameter `keep` says no to: a ZeRO-1 rank keeps only the
  // state of the parameters it updates.
  void retain_state(const std::function<bool(const std::string& name)>& keep);

 protected:
  struct ParamState {
    int64_t step = 0;                       // updates applied to this parameter
    std::map<std::string, Tensor> buffers;  // "exp_avg", "exp_avg_sq", "momentum_buffer", ...
  };
  // Update one parameter in place. `grad` is contiguous with the parameter's shape and dtype; s.step has
  // already been incremented for this update.
  virtual void update(const ParamGroup& g, Tensor& param, const Tensor& grad, ParamState& s) = 0;
  // Update all of one group's parameters that have a gradient this step (checked as for update(), steps incremented).
  // By default update() on each; an optimiser with a multi-tensor form (Adam, AdamW) updates a group's device
  // parameters of one step count and dtype in one launch.
  struct Pending {
    Tensor* param;
    Tensor grad;
    ParamState* state;
  };
  virtual void update_group(const ParamGroup& g, std::vector<Pending>& todo);
  // Names of the buffers a parameter with state must have (checked on load).
  virtual std::vector<std::string> buffer_names(const ParamGroup& g) const = 0;
  // Whether update() has a device branch (parameters, gradients and buffers on a CUDA device); step() refuses
  // device parameters otherwise, naming the optimiser.
  virtual bool updates_on_device() const { return false; }

  std::vector<ParamGroup> groups_;
  std::map<std::string, double> defaults_;
  std::map<std::string, ParamState> state_;  // by parameter name; absent until its first update
  int64_t step_count_ = 0;
};

// Run fn(begin, end) over [0, n) on both cores when n is large (a thin wrapper over tensor's parallel_for
// with the grain optimiser kernels use).
void parallel_chunks(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace dl::optim
