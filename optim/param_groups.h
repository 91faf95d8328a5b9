// optim/param_groups.h - build parameter groups from a Module's named parameters by rules.
//
// Each trainable parameter lands in exactly one group, decided in this order:
//   1. the first GroupRule with a pattern contained in its dotted name (e.g. S4's "kernel.log_dt") -> that
//      rule's group, with the rule's lr and weight decay (S4: lr 1e-3, no decay, as in state-spaces/s4);
//   2. if no_decay_norm_bias_embed: a 1-D parameter, or a name containing one of no_decay_patterns
//      ("norm", "ln", "bias", "embed", "wpe", "wte") -> group "no_decay" (base lr, weight decay 0);
//   3. otherwise -> group "default" (base lr, base weight decay).
// Patterns are plain case-sensitive substrings of the dotted name: "B" matches "layers.0.kernel.B" and
// also any other name with a capital B (our names are snake_case, so in practice only S4's matrices).
// Groups that end up empty are dropped; the rest keep the order default, no_decay, rules in order.
// Frozen parameters (requires_grad false) are left out unless include_frozen is set.
#pragma once
#include <optional>

#include "nn/module.h"
#include "optim/optimizer.h"

namespace dl::optim {

struct GroupRule {
  std::string name;                       // the group's name, e.g. "ssm"
  std::vector<std::string> patterns;      // substrings of the dotted parameter name
  std::optional<double> lr;               // unset: the base lr
  std::optional<double> weight_decay;     // unset: the base weight decay
  std::map<std::string, double> options;  // optimiser option overrides for this group
};

// The S4 rule: state-space parameters A, B, dt (and P, the low-rank term) get their own lr, no weight decay.
std::vector<std::string> s4_param_patterns();  // {"log_dt", "inv_dt", "A_real", "A_imag", "B", "P"}
GroupRule s4_rule(double lr = 1e-3, std::vector<std::string> patterns = s4_param_patterns());

struct GroupingOptions {
  double lr = 1e-3;
  double weight_decay = 0;
  std::vector<GroupRule> rules;
  bool no_decay_norm_bias_embed = false;
  std::vector<std::string> no_decay_patterns{"norm", "ln", "bias", "embed", "wpe", "wte"};
  bool include_frozen = false;
};

std::vector<ParamGroup> make_param_groups(const nn::Module& m, const GroupingOptions& opt);

// A one-line-per-group summary ("ssm: 12 params (3,072 values), lr 0.001, wd 0") for logs.
std::string describe_groups(const std::vector<ParamGroup>& groups);

}  // namespace dl::optim
