// nn/models/model_registry.h - the models an app's "model" field can name: one line per model, beside the layer
// registry (nn/registry.h) it builds on.
//
// A model here is the sequence backbone (sequence_backbone.h) with one registry layer as the mixer of every block.
// Every registry layer is a model of its own name, except "attention", whose model is "transformer" (attention that
// takes the backbone's position scheme and a local window). A variant is a layer with some options fixed, so that two
// settings of one layer can be two values of one sweep's model axis (s4d-random: S4D without HiPPO, the control of
// Amos et al.'s Section 3.3). Apps ask an entry what it can do (family, positions) instead of testing names.
#pragma once
#include <string>
#include <vector>

#include "nn/registry.h"

namespace dl::nn {

struct ModelEntry {
  std::string name;       // what a config's "model" says: "transformer", "s4d", "s4d-random"
  std::string layer;      // the registry layer of every block
  std::string layer_cfg;  // a JSON object of options over the backbone's (nn::backbone_config); "" for none
  std::string summary;    // one line for `list`
  // what apps ask:
  LayerFamily family;      // its layer's
  bool positions = false;  // takes a position scheme (rotary, learned, sinusoidal) and a local attention window
};

// "transformer", then every registry layer but "attention" (in the layer registry's order), then the variants.
const std::vector<ModelEntry>& model_registry();
// The entry of that name; an unknown name throws listing the known ones.
const ModelEntry& find_model(const std::string& name);
std::vector<std::string> model_names();  // model_registry()'s names, in its order

}  // namespace dl::nn
