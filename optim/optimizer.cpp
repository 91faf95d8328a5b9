// optim/optimizer.cpp - parameter groups, step/zero_grad and the optimiser state (see optimizer.h).
#include "optim/optimizer.h"

#include <nlohmann/json.hpp>
#include <set>

#include "tensor/elementwise.h"

namespace dl::optim {

using json = nlohmann::json;

void parallel_chunks(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  // 16K floats of Adam are ~10 us of work: below that, waking the second thread costs more than it saves.
  dl::parallel_for(n, 1 << 14, fn);
}

ParamGroup make_group(const std::vector<Var>& params, double lr, double weight_decay) {
  ParamGroup g;
  g.lr = lr;
  g.weight_decay = weight_decay;
  for (auto& v : params) g.params.push_back({"", v});
  return g;
}

Optimizer::Optimizer(std::vector<ParamGroup> groups, std::map<std::string, double> defaults)
    : groups_(std::move(groups)), defaults_(std::move(defaults)) {
  std::set<std::string> names;
  std::set<const VarImpl*> seen;
  int k = 0;
  for (auto& g : groups_) {
    if (g.base_lr < 0) g.base_lr = g.lr;
    if (g.lr < 0) fail("optimizer: group '" + g.name + "' has a negative lr " + std::to_string(g.lr));
    for (auto& [key, v] : g.options)
      if (!defaults_.count(key)) {
        std::string known;
        for (auto& [d, dv] : defaults_) known += (known.empty() ? "" : ", ") + d;
        fail("optimizer: group '" + g.name + "' sets unknown option '" + key + "' (known: " + known + ")");
      }
    for (auto& p : g.params) {
      if (p.name.empty()) p.name = "param" + std::to_string(k);
      k++;
      if (!p.var.defined()) fail("optimizer: parameter '" + p.name + "' in group '" + g.name + "' is an undefined Var");
      if (!names.insert(p.name).second) fail("optimizer: parameter name '" + p.name + "' appears twice");
      if (!seen.insert(p.var.impl()).second)
        fail("optimizer: parameter '" + p.name + "' is the same Var as an earlier parameter (in more than one group?)");
    }
  }
}

const ParamGroup& Optimizer::group(size_t g) const {
  if (g >= groups_.size())
    fail("optimizer: group " + std::to_string(g) + " out of range (" + std::to_string(groups_.size()) + " groups)");
  return groups_[g];
}
ParamGroup& Optimizer::group(size_t g) { return const_cast<ParamGroup&>(std::as_const(*this).group(g)); }

void Optimizer::set_lr(double lr) {
  for (auto& g : groups_) g.lr = lr;
}

double Optimizer::option(const ParamGroup& g, const std::string& key) const {
  auto it = g.options.find(key);
  if (it != g.options.end()) return it->second;
  auto d = defaults_.find(key);
  if (d == defaults_.end()) fail(type_name() + ": no option named '" + key + "'");
  return d->second;
}

std::vector<NamedParam> Optimizer::all_params() const {
  std::vector<NamedParam> out;
  for (auto& g : groups_) out.insert(out.end(), g.params.begin(), g.params.end());
  return out;
}

void Optimizer::update_group(const ParamGroup& g, std::vector<Pending>& todo) {
  for (Pending& u : todo) update(g, *u.param, u.grad, *u.state);
}

void Optimizer::step() {
  for (auto& g : groups_) {
    std::vector<Pending> todo;
    for (auto& p : g.params) {
      const Tensor& grad0 = p.var.grad();
      if (!grad0.defined()) continue;
      Tensor& param = p.var.mutable_data();
      if (param.device() != Device::cpu && !updates_on_device())
        fail(type_name() + ": parameter '" + p.name + "' is on " + device_name(param.device()) +
             ", and this optimiser updates CPU parameters only (Adam and AdamW have a device branch)");
      if (grad0.device() != param.device())
        fail(type_name() + ": gradient of '" + p.name + "' is on " + device_name(grad0.device()) + ", the parameter on " +
             device_name(param.device()));
      if (!param.is_contiguous())
        fail(type_name() + ": parameter '" + p.name + "' is not contiguous; parameters must own contiguous storage");
      if (param.dtype() == DType::i64) fail(type_name() + ": parameter '" + p.name + "' is an integer tensor");
      if (grad0.shape() != param.shape())
        fail(type_name() + ": gradient of '" + p.name + "' has shape " + shape_str(grad0.shape()) + ", the parameter " +
             shape_str(param.shape()));
      Tensor grad = grad0.dtype() == param.dtype() ? grad0.contiguous() : grad0.to(param.dtype());
      ParamState& s = state_[p.name];
      s.step++;
      todo.push_back({&param, grad, &s});
    }
    update_group(g, todo);
  }
  step_count_++;
}

void Optimizer::zero_grad() {
  for (auto& g : groups_)
    for (auto& p : g.params) p.var.zero_grad();
}

void Optimizer::retain_state(const std::function<bool(const std::string& name)>& keep) {
  for (auto it = state_.begin(); it != state_.end();) it = keep(it->first) ? std::next(it) : state_.erase(it);
}

OptimizerState Optimizer::state_dict() const {
  OptimizerState out;
  json j;
  j["optimizer"] = type_name();
  j["step_count"] = step_count_;
  j["groups"] = json::array();
  for (auto& g : groups_) {
    json jg = {{"name", g.name}, {"lr", g.lr}, {"base_lr", g.base_lr}, {"weight_decay", g.weight_decay}, {"options", g.options}};
    jg["params"] = json::array();
    for (auto& p : g.params) jg["params"].push_back(p.name);
    j["groups"].push_back(jg);
  }
  j["param_steps"] = json::object();
  for (auto& [name, s] : state_) {
    j["param_steps"][name] = s.step;
    for (auto& [b, t] : s.buffers) out.tensors[name + "." + b] = t.device() == Device::cpu ? t.clone() : t.to(Device::cpu);
  }
  out.json = j.dump();
  return out;
}

void Optimizer::load_state_dict(const OptimizerState& st) {
  std::string who = type_name() + ".load_state_dict";
  json j;
  try {
    j = json::parse(st.json);
  } catch (const std::exception& e) {
    fail(who + ": the state's JSON does not parse: " + e.what());
  }
  try {
    if (j.at("optimizer").get<std::string>() != type_name())
      fail(who + ": the state was saved by " + j.at("optimizer").get<std::string>() + ", not " + type_name());
    const json& jgroups = j.at("groups");
    if (jgroups.size() != groups_.size())
      fail(who + ": the state has " + std::to_string(jgroups.size()) + " parameter groups, this optimiser " +
           std::to_string(groups_.size()));
    std::map<std::string, const NamedParam*> by_name;
    std::map<std::string, const ParamGroup*> group_of;
    for (size_t gi = 0; gi < groups_.size(); gi++) {
      const ParamGroup& g = groups_[gi];
      const json& jg = jgroups[gi];
      std::vector<std::string> saved = jg.at("params").get<std::vector<std::string>>(), mine;
      for (auto& p : g.params) {
        mine.push_back(p.name);
        by_name[p.name] = &p;
        group_of[p.name] = &g;
      }
      if (jg.at("name").get<std::string>() != g.name || saved != mine) {
        std::string msg = who + ": group " + std::to_string(gi) + " ('" + g.name + "', " + std::to_string(mine.size()) +
                          " params) does not match the saved group ('" + jg.at("name").get<std::string>() + "', " +
                          std::to_string(saved.size()) + " params)";
        std::set<std::string> a(mine.begin(), mine.end()), b(saved.begin(), saved.end());
        for (auto& n : a)
          if (!b.count(n)) {
            msg += "; not in the state: " + n;
            break;
          }
        for (auto& n : b)
          if (!a.count(n)) {
            msg += "; only in the state: " + n;
            break;
          }
        fail(msg);
      }
    }
    // Build the new state completely before touching ours, so a failed load changes nothing.
    std::map<std::string, ParamState> fresh;
    std::set<std::string> used;
    for (auto& [name, jstep] : j.at("param_steps").items()) {
      auto it = by_name.find(name);
      if (it == by_name.end()) fail(who + ": the state has moments for '" + name + "', which is not a parameter here");
      const Tensor& param = it->second->var.data();
      ParamState s;
      s.step = jstep.get<int64_t>();
      for (auto& b : buffer_names(*group_of[name])) {
        std::string key = name + "." + b;
        auto t = st.tensors.find(key);
        if (t == st.tensors.end())
          fail(who + ": parameter '" + name + "' has saved state (step " + std::to_string(s.step) + ") but its buffer '" + key +
               "' is missing");
        if (t->second.shape() != param.shape())
          fail(who + ": buffer '" + key + "' has shape " + shape_str(t->second.shape()) + ", the parameter " +
               shape_str(param.shape()));
        s.buffers[b] = t->second.to(param.dtype()).clone().to(param.device());  // the state lives beside its parameter
        used.insert(key);
      }
      fresh[name] = std::move(s);
    }
    for (auto& [key, t] : st.tensors)
      if (!used.count(key)) fail(who + ": the state holds '" + key + "', which belongs to no parameter with saved state");
    for (size_t gi = 0; gi < groups_.size(); gi++) {
      groups_[gi].lr = jgroups[gi].at("lr").get<double>();
      groups_[gi].base_lr = jgroups[gi].at("base_lr").get<double>();
    }
    state_ = std::move(fresh);
    step_count_ = j.at("step_count").get<int64_t>();
  } catch (const json::exception& e) {
    fail(who + ": the state's JSON lacks a field or has a wrong type: " + e.what());
  }
}

}  // namespace dl::optim
