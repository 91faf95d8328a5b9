// nn/registry.h - the sequence layers that apps choose by name: one line per layer in nn/registry.cpp.
//
// An entry knows a layer's name, a one-line summary, the config fields its from_config takes, and how to build
// it. Backbones build any entry the same way: the fields every backbone knows (BackboneOptions) go to the layers
// whose config takes them, and the user's own layer options (a JSON object) are merged over them. So a new layer
// works in every app once it has its file, its registry line and its test (docs/adding_a_layer.md).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/sequence_layer.h"

namespace dl::nn {

using LayerFactory = std::function<std::shared_ptr<SequenceLayer>(int64_t d_model, const LayerConfig& cfg, Generator& gen)>;

// The family a layer belongs to: what apps and reports ask of a layer instead of its name (the LRA report sets every
// state-space model beside the Transformer, whichever it is).
enum class LayerFamily { attention, convolution, mixing, recurrent, state_space };
const char* family_name(LayerFamily f);  // "attention", "convolution", "mixing", "recurrent", "state-space"

struct LayerEntry {
  std::string name;                      // e.g. "attention", "s4d"
  std::string summary;                   // one line for `list`
  LayerFamily family;
  std::vector<std::string> config_keys;  // every field the layer's config takes (its from_config's own list)
  LayerFactory make;
  bool takes(const std::string& key) const;
};

const std::vector<LayerEntry>& layer_registry();
// The entry of that name; an unknown name throws listing the known ones.
const LayerEntry& find_layer(const std::string& name);
// Builds a layer by name (find_layer(name).make).
std::shared_ptr<SequenceLayer> make_layer(const std::string& name, int64_t d_model, const LayerConfig& cfg, Generator& gen);

// What a backbone knows for every layer it stacks. backbone_config(entry, o) keeps the fields the entry's config
// takes: "dropout"; "causal" = o.causal and "bidirectional" = !o.causal (a layer that can look both ways does,
// unless the backbone must be causal); "max_len" (token mixers sized for one length); "d_state" and "heads"
// when > 0 (0: the layer's default).
struct BackboneOptions {
  double dropout = 0;
  bool causal = false;
  int64_t max_len = 0;
  int64_t d_state = 0, heads = 0;
};
LayerConfig backbone_config(const LayerEntry& entry, const BackboneOptions& o);

}  // namespace dl::nn
