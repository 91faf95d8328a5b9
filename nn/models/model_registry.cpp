// nn/models/model_registry.cpp - see model_registry.h.
#include "nn/models/model_registry.h"

#include "tensor/tensor.h"

namespace dl::nn {

const std::vector<ModelEntry>& model_registry() {
  static const std::vector<ModelEntry> entries = [] {
    const LayerEntry& attention = find_layer("attention");
    std::vector<ModelEntry> v = {
        {"transformer", "attention", "", "the Transformer: " + attention.summary, attention.family, /*positions=*/true}};
    for (const LayerEntry& e : layer_registry())
      if (e.name != "attention") v.push_back({e.name, e.name, "", e.summary, e.family});
    // variants: a layer with options fixed (one line each)
    v.push_back({"s4d-random", "s4d", R"({"init": "random"})",
                 "S4D with A drawn at random: Re A ~ -U(0,1], Im A = exp(N(0,1)) (no HiPPO)", find_layer("s4d").family});
    return v;
  }();
  return entries;
}

const ModelEntry& find_model(const std::string& name) {
  for (const ModelEntry& m : model_registry())
    if (m.name == name) return m;
  std::string known;
  for (const ModelEntry& m : model_registry()) known += (known.empty() ? "" : ", ") + m.name;
  fail("unknown model '" + name + "'; known models: " + known);
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const ModelEntry& m : model_registry()) names.push_back(m.name);
  return names;
}

}  // namespace dl::nn
