// optim/param_groups.cpp - see param_groups.h for the rules.
#include "optim/param_groups.h"

#include <sstream>

namespace dl::optim {

std::vector<std::string> s4_param_patterns() { return {"log_dt", "inv_dt", "A_real", "A_imag", "B", "P"}; }

GroupRule s4_rule(double lr, std::vector<std::string> patterns) {
  GroupRule r;
  r.name = "ssm";
  r.patterns = std::move(patterns);
  r.lr = lr;
  r.weight_decay = 0.0;
  return r;
}

static bool contains_any(const std::string& name, const std::vector<std::string>& pats) {
  for (auto& p : pats)
    if (!p.empty() && name.find(p) != std::string::npos) return true;
  return false;
}

std::vector<ParamGroup> make_param_groups(const nn::Module& m, const GroupingOptions& opt) {
  ParamGroup def, nodecay;
  def.name = "default";
  def.lr = opt.lr;
  def.weight_decay = opt.weight_decay;
  nodecay.name = "no_decay";
  nodecay.lr = opt.lr;
  nodecay.weight_decay = 0;
  std::vector<ParamGroup> ruled(opt.rules.size());
  for (size_t i = 0; i < opt.rules.size(); i++) {
    const GroupRule& r = opt.rules[i];
    if (r.name.empty() || r.name == "default" || r.name == "no_decay")
      fail("make_param_groups: rule " + std::to_string(i) + " needs its own name (not empty, 'default' or 'no_decay')");
    ruled[i].name = r.name;
    ruled[i].lr = r.lr.value_or(opt.lr);
    ruled[i].weight_decay = r.weight_decay.value_or(opt.weight_decay);
    ruled[i].options = r.options;
  }
  for (auto& [name, v] : m.named_parameters(!opt.include_frozen)) {
    bool placed = false;
    for (size_t i = 0; i < opt.rules.size() && !placed; i++)
      if (contains_any(name, opt.rules[i].patterns)) {
        ruled[i].params.push_back({name, v});
        placed = true;
      }
    if (placed) continue;
    if (opt.no_decay_norm_bias_embed && (v.dim() <= 1 || contains_any(name, opt.no_decay_patterns)))
      nodecay.params.push_back({name, v});
    else def.params.push_back({name, v});
  }
  std::vector<ParamGroup> out;
  for (auto* g : {&def, &nodecay})
    if (!g->params.empty()) out.push_back(std::move(*g));
  for (auto& g : ruled)
    if (!g.params.empty()) out.push_back(std::move(g));
  return out;
}

std::string describe_groups(const std::vector<ParamGroup>& groups) {
  std::ostringstream os;
  for (auto& g : groups) {
    int64_t n = 0;
    for (auto& p : g.params) n += p.var.numel();
    os << g.name << ": " << g.params.size() << " params (" << n << " values), lr " << g.lr << ", wd " << g.weight_decay;
    for (auto& [k, v] : g.options) os << ", " << k << " " << v;
    os << "\n";
  }
  return os.str();
}

}  // namespace dl::optim
