// nn/registry.h - sequence layers that apps choose by name, one registry line each.
//
// A SequenceLayer maps (B, L, H) to (B, L, H) with an optional padding mask; the backbones in apps
// (LRA encoder, SPT pretraining) stack them with norms and residuals. Adding a layer is one header/source
// pair implementing SequenceLayer, one line in nn/registry.cpp, one test (docs/adding_a_layer.md).
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nn/module.h"

namespace dl::nn {

using LayerConfig = nlohmann::json;

struct SequenceLayer : Module {
  // x: (B, L, H). mask: (B, L) with 1 for real positions and 0 for padding, or undefined (no padding).
  // Returns (B, L, H). Layers that mix along L must not let padding leak into real positions.
  virtual Var forward(const Var& x, const Tensor& mask) = 0;
  // True when the layer never looks at future positions (usable for causal LM pretraining).
  virtual bool is_causal() const { return false; }
};

using LayerFactory = std::function<std::shared_ptr<SequenceLayer>(int64_t d_model, const LayerConfig& cfg, Generator& gen)>;

struct LayerEntry {
  std::string name;     // e.g. "attention", "s4d"
  std::string summary;  // one line for `--list`
  LayerFactory make;
};

const std::vector<LayerEntry>& layer_registry();
// Builds a layer by name; an unknown name throws listing the known ones.
std::shared_ptr<SequenceLayer> make_layer(const std::string& name, int64_t d_model, const LayerConfig& cfg, Generator& gen);

// Typed config access with errors that name the layer, the field, and the expected and found types.
int64_t cfg_int(const LayerConfig& c, const std::string& layer, const std::string& key, int64_t def);
double cfg_float(const LayerConfig& c, const std::string& layer, const std::string& key, double def);
bool cfg_bool(const LayerConfig& c, const std::string& layer, const std::string& key, bool def);
std::string cfg_str(const LayerConfig& c, const std::string& layer, const std::string& key, const std::string& def);

}  // namespace dl::nn
