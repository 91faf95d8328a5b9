// nn/sequence_layer.cpp - see nn/sequence_layer.h.
#include "nn/sequence_layer.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "autograd/shape_ops.h"
#include "autograd/views.h"

namespace dl::nn {

std::vector<std::string> own_lr_parameter_names(const Module& root) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  std::function<void(const Module&, const std::string&)> walk = [&](const Module& m, const std::string& prefix) {
    if (auto* layer = dynamic_cast<const SequenceLayer*>(&m))
      for (auto& n : layer->own_lr_parameters())
        if (seen.insert(prefix + n).second) out.push_back(prefix + n);
    for (auto& [name, child] : m.named_children()) walk(*child, prefix + name + ".");
  };
  walk(root, "");
  return out;
}

void check_step_input(const std::string& layer, const Var& x, int64_t H) {
  if (x.dim() != 2 || x.size(1) != H)
    fail("layer " + layer + ": step takes one position (B, " + std::to_string(H) + "), found shape " + shape_str(x.shape()));
}

void check_stream_state(const std::string& layer, const StreamState& s, size_t tensors, int64_t B) {
  if (s.t.size() != tensors || (tensors > 0 && s.t[0].size(0) != B))
    fail("layer " + layer + ": the stream state does not come from start_stream(" + std::to_string(B) + ")");
}

std::string SequenceLayer::export_onnx(onnx::Graph&, const onnx::Sequence&, const std::string& prefix) {
  std::string where = prefix.empty() ? "" : " (" + prefix.substr(0, prefix.size() - 1) + ")";
  fail("layer '" + type_name() + "'" + where + " has no ONNX export yet (docs/onnx.md lists the layers that export)");
}

double SequenceLayer::forward_flops(int64_t, int64_t) const {
  fail("layer '" + type_name() + "' has no FLOP count yet (SequenceLayer::forward_flops; docs/adding_a_layer.md)");
}

double fft_flops(double n) { return n > 1 ? 5.0 * n * std::log2(n) : 0.0; }
double rfft_flops(double n) { return fft_flops(n) / 2; }

StreamState SequenceLayer::start_stream(int64_t batch) const {
  if (!is_causal())
    fail("layer " + type_name() + " looks at later positions (it is not causal), so it cannot run one position at a time");
  if (batch <= 0) fail("layer " + type_name() + ": start_stream needs a batch of at least 1, found " + std::to_string(batch));
  return StreamState{};
}

Var SequenceLayer::step(const Var& x, StreamState& s) {
  if (!is_causal())
    fail("layer " + type_name() + " looks at later positions (it is not causal), so it cannot run one position at a time");
  if (x.dim() != 2) fail("layer " + type_name() + ": step takes one position (B, H), found shape " + shape_str(x.shape()));
  Var xt = unsqueeze(x, 1);  // (B, 1, H)
  Var all = s.t.empty() ? xt : cat({Var(s.t[0]), xt}, 1);
  s.t = {all.data()};  // the inputs so far, outside any graph
  s.pos++;
  Var y = forward(all, Tensor());                            // (B, t + 1, H)
  return reshape(narrow(y, 1, s.pos - 1, 1), {x.size(0), -1});  // (B, H)
}

static const char* json_type(const LayerConfig& v) { return v.type_name(); }

int64_t cfg_int(const LayerConfig& c, const std::string& layer, const std::string& key, int64_t def) {
  if (!c.is_object() || !c.contains(key)) return def;
  const auto& v = c.at(key);
  if (!v.is_number_integer())
    fail("layer " + layer + ": config field '" + key + "' must be an integer, found " + json_type(v) + " (" + v.dump() + ")");
  return v.get<int64_t>();
}
double cfg_float(const LayerConfig& c, const std::string& layer, const std::string& key, double def) {
  if (!c.is_object() || !c.contains(key)) return def;
  const auto& v = c.at(key);
  if (!v.is_number())
    fail("layer " + layer + ": config field '" + key + "' must be a number, found " + json_type(v) + " (" + v.dump() + ")");
  return v.get<double>();
}
bool cfg_bool(const LayerConfig& c, const std::string& layer, const std::string& key, bool def) {
  if (!c.is_object() || !c.contains(key)) return def;
  const auto& v = c.at(key);
  if (!v.is_boolean())
    fail("layer " + layer + ": config field '" + key + "' must be true/false, found " + json_type(v) + " (" + v.dump() + ")");
  return v.get<bool>();
}
std::string cfg_str(const LayerConfig& c, const std::string& layer, const std::string& key, const std::string& def) {
  if (!c.is_object() || !c.contains(key)) return def;
  const auto& v = c.at(key);
  if (!v.is_string())
    fail("layer " + layer + ": config field '" + key + "' must be a string, found " + json_type(v) + " (" + v.dump() + ")");
  return v.get<std::string>();
}

double cfg_dropout(const LayerConfig& c, const std::string& layer, const std::string& key) {
  double p = cfg_float(c, layer, key, 0.0);
  if (p < 0 || p >= 1) config_error(layer, key, "must be in [0, 1)", std::to_string(p));
  return p;
}

void check_sequence_input(const std::string& layer, const Var& x, int64_t H) {
  if (x.dim() != 3)
    fail("layer " + layer + ": input must be (B, L, H) with H = " + std::to_string(H) + ", found shape " + shape_str(x.shape()));
  if (x.size(2) != H)
    fail("layer " + layer + ": input has " + std::to_string(x.size(2)) + " channels, expected " + std::to_string(H) +
         " (input shape " + shape_str(x.shape()) + ")");
  if (x.size(1) < 1) fail("layer " + layer + ": empty sequence (input shape " + shape_str(x.shape()) + ")");
}

Var apply_mask(const Var& x, const Tensor& mask) {
  if (!mask.defined()) return x;
  if (mask.dim() != 2 || mask.size(0) != x.size(0) || mask.size(1) != x.size(1))
    fail("padding mask must be (B, L) = (" + std::to_string(x.size(0)) + ", " + std::to_string(x.size(1)) + "), found " +
         shape_str(mask.shape()));
  return mul(x, Var(mask.to(x.data().device()).to(x.dtype()).unsqueeze(2)));  // a host mask follows x to its device
}

void check_config_keys(const LayerConfig& cfg, const std::string& layer, const std::vector<std::string>& known) {
  if (cfg.is_null()) return;
  if (!cfg.is_object()) fail("layer " + layer + ": config must be a JSON object, found " + cfg.dump());
  for (auto it = cfg.begin(); it != cfg.end(); ++it)
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
      std::string k;
      for (auto& s : known) k += (k.empty() ? "" : ", ") + s;
      fail("layer " + layer + ": unknown config field '" + it.key() + "' (known: " + k + ")");
    }
}

void config_error(const std::string& layer, const std::string& field, const std::string& what, const std::string& found) {
  fail("layer " + layer + ": config field '" + field + "' " + what + ", found " + found);
}

}  // namespace dl::nn
