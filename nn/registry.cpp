// nn/registry.cpp - the layer registry: one line per layer. Keep it sorted by family.
#include "nn/registry.h"

// layer headers, one include per layer file:
#include "nn/conv_seq.h"
#include "nn/attention.h"
#include "nn/dlr.h"
#include "nn/fnet.h"
#include "nn/linear_attention.h"
#include "nn/lstm.h"
#include "nn/s4.h"
#include "nn/s4d.h"
#include "nn/s4d_minimal.h"
#include "nn/transformer.h"

namespace dl::nn {

const std::vector<LayerEntry>& layer_registry() {
  static const std::vector<LayerEntry> entries = {
      // {"name", "one-line summary", [](int64_t d, const LayerConfig& c, Generator& g) { return ...; }},
      // state-space family (nn/s4d.h, nn/s4.h, nn/dlr.h)
      {"s4", "S4 with a DPLR (HiPPO-LegS) state matrix, Cauchy kernel (Gu et al. 2022)",
       [](int64_t d, const LayerConfig& c, Generator& g) -> std::shared_ptr<SequenceLayer> { return S4::from_config(d, c, g); }},
      {"s4d", "S4D: diagonal SSM, ZOH/bilinear, lin/inv/legs/real init (Gu et al. 2022)",
       [](int64_t d, const LayerConfig& c, Generator& g) -> std::shared_ptr<SequenceLayer> { return S4D::from_config(d, c, g); }},
      {"s4d_minimal", "minimal teaching S4D (S4D-Lin, ZOH, composed kernel)",
       [](int64_t d, const LayerConfig& c, Generator& g) -> std::shared_ptr<SequenceLayer> { return S4DMinimal::from_config(d, c, g); }},
      {"dlr", "diagonal linear RNN, omega init (Gupta et al. 2022)",
       [](int64_t d, const LayerConfig& c, Generator& g) -> std::shared_ptr<SequenceLayer> { return DLR::from_config(d, c, g); }},
      // recurrent family (nn/lstm.h)
      {"lstm", "LSTM as torch.nn.LSTM (fused cell), optional layer norm",
       [](int64_t d, const LayerConfig& c, Generator& g) -> std::shared_ptr<SequenceLayer> { return LSTM::from_config(d, c, g); }},
      // convolution family (nn/conv_seq.h)
      {"lightconv", "lightweight convolution in a GLU block (Wu et al. 2019; Tay et al. 2021)",
       [](int64_t d, const LayerConfig& c, Generator& g) -> std::shared_ptr<SequenceLayer> { return GLUConvBlock::from_config("lightconv", d, c, g); }},
      {"dynamicconv", "dynamic convolution in a GLU block (Wu et al. 2019; Tay et al. 2021)",
       [](int64_t d, const LayerConfig& c, Generator& g) -> std::shared_ptr<SequenceLayer> { return GLUConvBlock::from_config("dynamicconv", d, c, g); }},
      {"dilatedconv", "dilated depthwise-separable convolution in a GLU block (Tay et al. 2021)",
       [](int64_t d, const LayerConfig& c, Generator& g) -> std::shared_ptr<SequenceLayer> { return GLUConvBlock::from_config("dilatedconv", d, c, g); }},
      // Fourier mixing family (nn/fnet.h)
      {"fnet", "FNet token mixing y = Re(FFT2(x)) over (L, H), no parameters (Lee-Thorp et al. 2021)",
       [](int64_t d, const LayerConfig& c, Generator& g) -> std::shared_ptr<SequenceLayer> { return FNet::from_config(d, c, g); }},
      // attention family (nn/attention.h, nn/linear_attention.h, nn/transformer.h)
      {"attention", "multi-head softmax attention; heads, dropout, rotary, causal, window, fused",
       [](int64_t d, const LayerConfig& c, Generator& g) -> std::shared_ptr<SequenceLayer> { return MultiheadAttention::from_config(d, c, g); }},
      {"linear_attention", "linear attention, phi = elu+1 or relu, causal by prefix sums (Katharopoulos et al. 2020)",
       [](int64_t d, const LayerConfig& c, Generator& g) -> std::shared_ptr<SequenceLayer> { return LinearAttention::from_config(d, c, g); }},
      {"performer", "Performer FAVOR+ positive orthogonal random features, m = features (Choromanski et al. 2021)",
       [](int64_t d, const LayerConfig& c, Generator& g) -> std::shared_ptr<SequenceLayer> { return Performer::from_config(d, c, g); }},
      {"mixer", "MLP-Mixer token-mixing block over max_len positions (Tolstikhin et al. 2021)",
       [](int64_t d, const LayerConfig& c, Generator& g) -> std::shared_ptr<SequenceLayer> { return MixerBlock::from_config(d, c, g); }},
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
