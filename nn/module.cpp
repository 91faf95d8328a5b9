// nn/module.cpp - the Module tree (see module.h).
#include "nn/module.h"

#include <sstream>

#include "tensor/safetensors.h"

namespace dl::nn {

static bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

std::string LoadReport::str() const {
  std::ostringstream os;
  os << loaded.size() << " loaded";
  auto list = [&](const char* what, const std::vector<std::string>& v) {
    if (v.empty()) return;
    os << "; " << v.size() << " " << what << ":";
    for (size_t i = 0; i < v.size() && i < 10; i++) os << " " << v[i];
    if (v.size() > 10) os << " ...";
  };
  list("missing", missing);
  list("unexpected", unexpected);
  list("shape mismatch", shape_mismatch);
  return os.str();
}

Var Module::register_parameter(const std::string& name, Tensor init, bool requires_grad) {
  for (auto& [n, p] : params_)
    if (n == name) fail(type_name() + ": parameter '" + name + "' registered twice");
  Var v(std::move(init), requires_grad);
  v.set_name(name);
  params_.emplace_back(name, v);
  return v;
}

void Module::register_buffer(const std::string& name, Tensor t) { buffers_.emplace_back(name, std::move(t)); }

Tensor& Module::buffer(const std::string& name) {
  for (auto& [n, t] : buffers_)
    if (n == name) return t;
  fail(type_name() + ": no buffer named '" + name + "'");
}

std::vector<std::pair<std::string, Var>> Module::named_parameters(bool trainable_only) const {
  std::vector<std::pair<std::string, Var>> out;
  for (auto& [n, p] : params_)
    if (!trainable_only || p.requires_grad()) out.emplace_back(n, p);
  for (auto& [cn, c] : children_)
    for (auto& [n, p] : c->named_parameters(trainable_only)) out.emplace_back(cn + "." + n, p);
  return out;
}

std::vector<Var> Module::parameters(bool trainable_only) const {
  std::vector<Var> out;
  for (auto& [n, p] : named_parameters(trainable_only)) out.push_back(p);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Tensor>> out = buffers_;
  for (auto& [cn, c] : children_)
    for (auto& [n, t] : c->named_buffers()) out.emplace_back(cn + "." + n, t);
  return out;
}

void Module::move_buffers(Device d) {
  for (auto& [n, t] : buffers_)
    if (t.defined() && t.device() != d) t = t.to(d);
  for (auto& [cn, c] : children_) c->move_buffers(d);
}

int64_t Module::num_parameters(bool trainable_only) const {
  int64_t n = 0;
  for (auto& [name, p] : named_parameters(trainable_only)) n += p.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, c] : children_) c->train(on);
}

void Module::zero_grad() {
  for (auto& p : parameters()) p.zero_grad();
}

int Module::set_requires_grad(const std::function<bool(const std::string&)>& pred, bool value) {
  int changed = 0;
  for (auto& [n, p] : named_parameters()) {
    if (!pred(n) || p.requires_grad() == value) continue;
    p.set_requires_grad(value);
    if (!value) p.zero_grad();
    changed++;
  }
  return changed;
}

std::map<std::string, Tensor> Module::state_dict() const {
  std::map<std::string, Tensor> sd;
  for (auto& [n, p] : named_parameters()) sd[n] = p.data();
  for (auto& [n, t] : named_buffers()) sd[n] = t;
  return sd;
}

LoadReport Module::load_state_dict(const std::map<std::string, Tensor>& sd0, const LoadOptions& opt) {
  std::map<std::string, Tensor> sd;
  for (auto& [n, t] : sd0) {
    if (!opt.strip_prefix.empty()) {
      if (!starts_with(n, opt.strip_prefix)) {
        bool ignored = false;
        for (auto& p : opt.ignore_unexpected) ignored |= starts_with(n, p);
        if (!ignored) sd[n] = t;  // reported as unexpected below
        continue;
      }
      sd[n.substr(opt.strip_prefix.size())] = t;
    } else {
      sd[n] = t;
    }
  }
  LoadReport r;
  std::map<std::string, Tensor> mine = state_dict();
  for (auto& [n, dst] : mine) {
    auto it = sd.find(n);
    if (it == sd.end()) {
      bool allowed = false;
      for (auto& p : opt.allow_missing) allowed |= starts_with(n, p);
      if (!allowed) r.missing.push_back(n);
      continue;
    }
    if (it->second.shape() != dst.shape()) {
      r.shape_mismatch.push_back(n + ": model has " + shape_str(dst.shape()) + ", file has " + shape_str(it->second.shape()));
      continue;
    }
    r.loaded.push_back(n);
  }
  for (auto& [n, t] : sd) {
    if (mine.count(n)) continue;
    bool ignored = false;
    for (auto& p : opt.ignore_unexpected) ignored |= starts_with(n, p);
    if (!ignored) r.unexpected.push_back(n);
  }
  if (opt.strict && !r.ok())
    throw CheckpointError(type_name() + ".load_state_dict: " + r.str() +
                          " (a partial load must be explicit: LoadOptions.allow_missing / ignore_unexpected)");
  // copy only after validation so a failed strict load leaves the model untouched
  for (auto& n : r.loaded) {
    Tensor dst = mine[n];
    dst.copy_(sd[n]);
  }
  return r;
}

void Module::save(const std::string& path, const std::map<std::string, std::string>& metadata) const {
  save_safetensors(path, state_dict(), metadata);
}

LoadReport Module::load(const std::string& path, const LoadOptions& opt) {
  TensorFile f = load_safetensors(path);
  try {
    return load_state_dict(f.tensors, opt);
  } catch (const CheckpointError& e) {
    throw CheckpointError(path + ": " + e.what());
  }
}

std::string Module::str(int indent) const {
  std::ostringstream os;
  std::string pad(indent, ' ');
  os << type_name() << "(" << extra_repr();
  if (params_.empty() && children_.empty()) return os.str() + ")";
  os << "\n";
  for (auto& [n, p] : params_)
    os << pad << "  " << n << ": " << shape_str(p.shape()) << (p.requires_grad() ? "" : " (frozen)") << "\n";
  for (auto& [n, c] : children_) os << pad << "  (" << n << "): " << c->str(indent + 2) << "\n";
  os << pad << ")";
  return os.str();
}

}  // namespace dl::nn
