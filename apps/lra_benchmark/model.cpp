// apps/lra_benchmark/model.cpp - see model.h for the architecture.
#include "model.h"

#include "nn/models/model_registry.h"

namespace lra {

using namespace dl;
using nn::LayerConfig;

// The mixer of one block: the model's registry layer (nn/models/model_registry.h: "transformer" is the registry's
// "attention"; a variant fixes some of its layer's options), built with what the backbone knows for every layer, the
// position and window options of a model that takes them, the variant's options, and the cell's layer_cfg last.
static std::shared_ptr<nn::SequenceLayer> make_mixer(const CellConfig& c, const TaskShape& t, bool causal, Generator& g) {
  const nn::ModelEntry& m = nn::find_model(c.model);
  const nn::LayerEntry& e = nn::find_layer(m.layer);
  nn::BackboneOptions bo;
  bo.dropout = c.dropout, bo.causal = causal, bo.max_len = t.max_len, bo.d_state = c.d_state, bo.heads = c.heads;
  LayerConfig l = nn::backbone_config(e, bo);
  if (m.positions) {
    l["rotary"] = c.pos == "rotary";
    if (c.window > 0) l["window"] = c.window;
  }
  if (!m.layer_cfg.empty()) l.update(LayerConfig::parse(m.layer_cfg));
  if (!c.layer_cfg.empty()) l.update(LayerConfig::parse(c.layer_cfg));
  auto mixer = e.make(c.d_model, l, g);
  if (causal && !mixer->is_causal())
    throw ConfigError(c.key() + ": layer '" + e.name +
                      "' looks at later positions, so it cannot be pretrained causally (use spt-masked)");
  return mixer;
}

static nn::SequenceBackboneOptions backbone_options(const CellConfig& c, const TaskShape& t) {
  nn::SequenceBackboneOptions o;
  o.vocab = t.vocab > 0 ? t.vocab + 1 : 0;  // + the [mask] id of masked SPT
  o.features = t.vocab > 0 ? 0 : t.features + 1;  // + the mask channel of masked SPT
  o.d_model = c.d_model, o.max_len = t.max_len, o.layers = c.layers;
  o.positions = nn::find_model(c.model).positions && (c.pos == "learned" || c.pos == "sinusoidal") ? c.pos : "none";
  o.input_dropout = true, o.final_norm = c.norm;
  o.block.norm = c.norm, o.block.prenorm = c.prenorm, o.block.dropout = c.dropout;
  o.block.ffn_hidden = (int64_t)c.d_model * c.ffn_mult;
  return o;
}

LraModel::LraModel(const CellConfig& c, const TaskShape& t, bool causal, Generator& g)
    : SequenceBackbone(backbone_options(c, t), [&](int64_t, Generator& gen) { return make_mixer(c, t, causal, gen); }, g),
      cfg(c),
      shape(t) {
  const int64_t D = c.d_model;
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
  // the batch is built on the host; on a device run (--device cuda) it follows the model there
  return SequenceBackbone::encode(shape.vocab > 0 ? in.tokens : in.features, in.mask);
}

Var LraModel::classify(const Inputs& a, const Inputs* b) {
  Var pa = pool(encode(a), a.mask, cfg.pool);
  if (!shape.two_tower) return head_->forward(pa);
  if (!b) fail("LraModel: the retrieval head needs two sequences");
  Var pb = pool(encode(*b), b->mask, cfg.pool);
  Var feats = cat({pa, pb, pa * pb, pa - pb}, 1);  // (B, 4D)
  return head_->forward(gelu(head2_->forward(feats)));
}

double LraModel::forward_flops(int64_t batch, int64_t L) const {
  const double towers = shape.two_tower ? 2.0 : 1.0, B = (double)batch;
  double head = nn::matmul_flops(B, head_->in_features, head_->out_features);
  if (head2_) head += nn::matmul_flops(B, head2_->in_features, head2_->out_features);
  return towers * SequenceBackbone::forward_flops(batch, L) + head;
}

Var LraModel::pretrain_logits(const Var& h) { return pretrain_head_->forward(h); }

}  // namespace lra
