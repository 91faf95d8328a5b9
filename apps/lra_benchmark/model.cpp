// apps/lra_benchmark/model.cpp - see model.h for the architecture.
#include "model.h"

#include "nn/init.h"
#include "nn/registry.h"
#include "nn/attention/positions.h"

#include <cmath>

namespace lra {

using namespace dl;
using nn::LayerConfig;

// The mixer of one block: the registry layer the model names ("transformer" is the registry's "attention"; a
// variant names its layer, config.h), built with what the backbone knows for every layer, the Transformer's position
// and window options, the variant's options, and the cell's layer_cfg last.
static std::shared_ptr<nn::SequenceLayer> make_mixer(const CellConfig& c, const TaskShape& t, bool causal, Generator& g) {
  const ModelVariant* variant = find_model_variant(c.model);
  const nn::LayerEntry& e = nn::find_layer(c.model == "transformer" ? "attention" : variant ? variant->layer : c.model);
  nn::BackboneOptions bo;
  bo.dropout = c.dropout, bo.causal = causal, bo.max_len = t.max_len, bo.d_state = c.d_state, bo.heads = c.heads;
  LayerConfig l = nn::backbone_config(e, bo);
  if (c.model == "transformer") {
    l["rotary"] = c.pos == "rotary";
    if (c.window > 0) l["window"] = c.window;
  }
  if (variant) l.update(LayerConfig::parse(variant->layer_cfg));
  if (!c.layer_cfg.empty()) l.update(LayerConfig::parse(c.layer_cfg));
  auto mixer = e.make(c.d_model, l, g);
  if (causal && !mixer->is_causal())
    throw ConfigError(c.key() + ": layer '" + e.name +
                      "' looks at later positions, so it cannot be pretrained causally (use spt-masked)");
  return mixer;
}

LraModel::LraModel(const CellConfig& c, const TaskShape& t, bool causal, Generator& g) : cfg(c), shape(t) {
  int64_t D = c.d_model;
  if (t.vocab > 0) embed_ = register_module("embed", std::make_shared<nn::Embedding>(t.vocab + 1, D, g));
  else in_proj_ = register_module("in_proj", std::make_shared<nn::Linear>(t.features + 1, D, g));
  if (c.model == "transformer" && c.pos == "learned") pos_ = register_parameter("pos", nn::init::normal({t.max_len, D}, 0.02, g));
  if (c.model == "transformer" && c.pos == "sinusoidal") sinusoid_ = nn::sinusoidal_table(t.max_len, D);
  blocks_ = register_module("blocks", std::make_shared<nn::ModuleList<nn::ResidualBlock>>());
  nn::ResidualBlockOptions bo;
  bo.norm = c.norm, bo.prenorm = c.prenorm, bo.dropout = c.dropout, bo.ffn_hidden = (int64_t)c.d_model * c.ffn_mult;
  for (int i = 0; i < c.layers; i++) {
    auto mixer = make_mixer(c, t, causal, g);  // built first: the seed's draws go mixer, then feed-forward
    blocks_->push_back(std::make_shared<nn::ResidualBlock>(mixer, c.d_model, bo, g));
  }
  final_norm_ = register_module("final_norm", nn::make_sequence_norm(c.norm, c.d_model));
  drop_ = register_module("drop", std::make_shared<nn::Dropout>(c.dropout, g));
  if (t.two_tower) {
    head2_ = register_module("head_hidden", std::make_shared<nn::Linear>(4 * D, D, g));
    head_ = register_module("head", std::make_shared<nn::Linear>(D, t.classes, g));
  } else {
    head_ = register_module("head", std::make_shared<nn::Linear>(D, t.classes, g));
  }
  int out = t.vocab > 0 ? t.vocab : t.features;
  pretrain_head_ = register_module("pretrain_head", std::make_shared<nn::Linear>(D, out, g));
}

Var LraModel::encode(const Inputs& in) {
  // the batch is built on the host; on a device run (--device cuda) the features follow the model there (token ids
  // are moved by the embedding, the mask by the ops that read it)
  const Device dev = head_->weight.data().device();
  Var x = embed_ ? embed_->forward(in.tokens) : in_proj_->forward(Var(in.features.to(dev)));  // (B, L, D)
  int64_t L = x.size(1);
  if (L > shape.max_len && (pos_.defined() || sinusoid_.defined()))
    fail("LraModel: sequence of length " + std::to_string(L) + " is longer than the positions table (" +
         std::to_string(shape.max_len) + ")");
  if (pos_.defined()) x = x + narrow(pos_, 0, 0, L);
  if (sinusoid_.defined()) x = x + Var(sinusoid_.narrow(0, 0, L).to(dev));
  x = drop_->forward(x);
  for (auto& b : blocks_->items()) x = b->forward(x, in.mask);
  return nn::apply_sequence_norm(*final_norm_, x);
}

Var LraModel::pool(const Var& h, const Tensor& mask, const std::string& how) {
  int64_t B = h.size(0), L = h.size(1);
  const Device dev = h.data().device();
  Tensor m = mask.defined() ? mask.to(dev) : ones({B, L}, DType::f32, dev);
  if (how == "last") {  // the last real position of each sequence (found on the host)
    Tensor mc = m.to(Device::cpu).to(DType::f32).contiguous();
    const float* pm = mc.data<float>();
    std::vector<int64_t> idx(B);
    for (int64_t b = 0; b < B; b++) {
      int64_t last = 0;
      for (int64_t l = 0; l < L; l++)
        if (pm[b * L + l] != 0) last = l;
      idx[b] = b * L + last;
    }
    return index_select(reshape(h, {B * L, h.size(2)}), 0, from_vector(idx, {B}));
  }
  // masked mean: sum_l m[b,l] h[b,l,:] / sum_l m[b,l]
  Tensor m3 = m.unsqueeze(2);                          // (B, L, 1)
  Tensor count = clamp(sum(m, {1}, true), 1.0, 1e30);  // (B, 1)
  return div(sum(mul(h, Var(m3)), {1}), Var(count));   // (B, D)
}

Var LraModel::classify(const Inputs& a, const Inputs* b) {
  Var pa = pool(encode(a), a.mask, cfg.pool);
  if (!shape.two_tower) return head_->forward(pa);
  if (!b) fail("LraModel: the retrieval head needs two sequences");
  Var pb = pool(encode(*b), b->mask, cfg.pool);
  Var feats = cat({pa, pb, pa * pb, pa - pb}, 1);  // (B, 4D)
  return head_->forward(gelu(head2_->forward(feats)));
}

Var LraModel::pretrain_logits(const Var& h) { return pretrain_head_->forward(h); }

}  // namespace lra
