// nn/zoo_common.cpp - see nn/zoo_common.h.
#include "nn/zoo_common.h"

#include <algorithm>

namespace dl::nn {

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
  return mul(x, Var(mask.to(x.dtype()).unsqueeze(2)));
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

void to_double(Module& m) {
  for (auto& [name, p] : m.named_parameters()) p.mutable_data() = p.data().to(DType::f64);
}

}  // namespace dl::nn
