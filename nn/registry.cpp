// nn/registry.cpp - the layer registry: one line per layer, grouped by family. Keep the families sorted.
#include "nn/registry.h"

#include <algorithm>

// layer headers, one include per layer file:
#include "nn/attention/attention.h"
#include "nn/attention/linear_attention.h"
#include "nn/conv/conv_seq.h"
#include "nn/mixing/fnet.h"
#include "nn/mixing/mlp_mixer.h"
#include "nn/recurrent/lstm.h"
#include "nn/ssm/dlr.h"
#include "nn/ssm/ema.h"
#include "nn/ssm/s4.h"
#include "nn/ssm/s4d.h"
#include "nn/ssm/s4d_minimal.h"

namespace dl::nn {

namespace {

// An entry for a layer class with the registry's two statics: from_config(d_model, cfg, gen) and config_keys().
template <class L> LayerEntry entry(LayerFamily f, std::string name, std::string summary) {
  return {
      std::move(name), std::move(summary), f, L::config_keys(),
      [](int64_t d, const LayerConfig& c, Generator& g) -> std::shared_ptr<SequenceLayer> { return L::from_config(d, c, g); }};
}

// The three convolution blocks are one class with a kind.
LayerEntry conv_entry(std::string kind, std::string summary) {
  return {kind, std::move(summary), LayerFamily::convolution, GLUConvBlock::config_keys(kind),
          [kind](int64_t d, const LayerConfig& c, Generator& g) -> std::shared_ptr<SequenceLayer> {
            return GLUConvBlock::from_config(kind, d, c, g);
          }};
}

}  // namespace

const std::vector<LayerEntry>& layer_registry() {
  // clang-format off
  static const std::vector<LayerEntry> entries = {
      // attention family (nn/attention/)
      entry<MultiheadAttention>(LayerFamily::attention, "attention",     "multi-head softmax attention; heads, dropout, rotary, causal, window, fused"),
      entry<LinearAttention>(LayerFamily::attention, "linear_attention", "linear attention, phi = elu+1 or relu, causal by prefix sums (Katharopoulos et al. 2020)"),
      entry<Performer>(LayerFamily::attention, "performer",              "Performer FAVOR+ positive orthogonal random features, m = features (Choromanski et al. 2021)"),
      // convolution family (nn/conv/)
      conv_entry("lightconv",                                            "lightweight convolution in a GLU block (Wu et al. 2019; Tay et al. 2021)"),
      conv_entry("dynamicconv",                                          "dynamic convolution in a GLU block (Wu et al. 2019; Tay et al. 2021)"),
      conv_entry("dilatedconv",                                          "dilated depthwise-separable convolution in a GLU block (Tay et al. 2021)"),
      // token mixing without attention (nn/mixing/)
      entry<FNet>(LayerFamily::mixing, "fnet",                           "FNet token mixing y = Re(FFT2(x)) over (L, H), no parameters (Lee-Thorp et al. 2021)"),
      entry<MixerBlock>(LayerFamily::mixing, "mixer",                    "MLP-Mixer token-mixing block over max_len positions (Tolstikhin et al. 2021)"),
      // recurrent family (nn/recurrent/)
      entry<LSTM>(LayerFamily::recurrent, "lstm",                        "LSTM as torch.nn.LSTM (fused cell), optional layer norm"),
      // state-space family (nn/ssm/)
      entry<S4>(LayerFamily::state_space, "s4",                          "S4 with a DPLR (HiPPO-LegS) state matrix, Cauchy kernel (Gu et al. 2022)"),
      entry<S4D>(LayerFamily::state_space, "s4d",                        "S4D: diagonal SSM, ZOH/bilinear, lin/inv/legs/real/random init (Gu et al. 2022)"),
      entry<S4DMinimal>(LayerFamily::state_space, "s4d_minimal",         "minimal teaching S4D (S4D-Lin, ZOH, composed kernel)"),
      entry<DLR>(LayerFamily::state_space, "dlr",                        "diagonal linear RNN, omega init (Gupta et al. 2022)"),
      entry<EMA>(LayerFamily::state_space, "ema",                        "MEGA's multi-dimensional damped EMA as a real diagonal SSM (Ma et al. 2023)"),
  };
  // clang-format on
  return entries;
}

const char* family_name(LayerFamily f) {
  switch (f) {
    case LayerFamily::attention: return "attention";
    case LayerFamily::convolution: return "convolution";
    case LayerFamily::mixing: return "mixing";
    case LayerFamily::recurrent: return "recurrent";
    case LayerFamily::state_space: return "state-space";
  }
  return "?";
}

bool LayerEntry::takes(const std::string& key) const {
  return std::find(config_keys.begin(), config_keys.end(), key) != config_keys.end();
}

const LayerEntry& find_layer(const std::string& name) {
  std::string known;
  for (auto& e : layer_registry()) {
    if (e.name == name) return e;
    known += (known.empty() ? "" : ", ") + e.name;
  }
  fail("unknown layer '" + name + "'; known layers: " + known);
}

std::shared_ptr<SequenceLayer> make_layer(const std::string& name, int64_t d_model, const LayerConfig& cfg, Generator& gen) {
  return find_layer(name).make(d_model, cfg, gen);
}

LayerConfig backbone_config(const LayerEntry& e, const BackboneOptions& o) {
  LayerConfig c = LayerConfig::object();
  if (e.takes("dropout")) c["dropout"] = o.dropout;
  if (e.takes("causal")) c["causal"] = o.causal;
  if (e.takes("bidirectional")) c["bidirectional"] = !o.causal;
  if (e.takes("max_len") && o.max_len > 0) c["max_len"] = o.max_len;
  if (e.takes("d_state") && o.d_state > 0) c["d_state"] = o.d_state;
  if (e.takes("heads") && o.heads > 0) c["heads"] = o.heads;
  return c;
}

}  // namespace dl::nn
