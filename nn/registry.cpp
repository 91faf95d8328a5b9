// nn/registry.cpp - the layer registry: one line per layer. Keep it sorted by family.
#include "nn/registry.h"

// layer headers, one include per layer file:

namespace dl::nn {

const std::vector<LayerEntry>& layer_registry() {
  static const std::vector<LayerEntry> entries = {
      // {"name", "one-line summary", [](int64_t d, const LayerConfig& c, Generator& g) { return ...; }},
  };
  return entries;
}

std::shared_ptr<SequenceLayer> make_layer(const std::string& name, int64_t d_model, const LayerConfig& cfg, Generator& gen) {
  std::string known;
  for (auto& e : layer_registry()) {
    if (e.name == name) return e.make(d_model, cfg, gen);
    known += (known.empty() ? "" : ", ") + e.name;
  }
  fail("unknown layer '" + name + "'; known layers: " + known);
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
  if (!v.is_number()) fail("layer " + layer + ": config field '" + key + "' must be a number, found " + json_type(v) + " (" + v.dump() + ")");
  return v.get<double>();
}
bool cfg_bool(const LayerConfig& c, const std::string& layer, const std::string& key, bool def) {
  if (!c.is_object() || !c.contains(key)) return def;
  const auto& v = c.at(key);
  if (!v.is_boolean()) fail("layer " + layer + ": config field '" + key + "' must be true/false, found " + json_type(v) + " (" + v.dump() + ")");
  return v.get<bool>();
}
std::string cfg_str(const LayerConfig& c, const std::string& layer, const std::string& key, const std::string& def) {
  if (!c.is_object() || !c.contains(key)) return def;
  const auto& v = c.at(key);
  if (!v.is_string()) fail("layer " + layer + ": config field '" + key + "' must be a string, found " + json_type(v) + " (" + v.dump() + ")");
  return v.get<std::string>();
}

}  // namespace dl::nn
