// apps/lra_benchmark/model.cpp - see model.h for the architecture.
#include "model.h"

#include "nn/init.h"
#include "nn/positions.h"

#include <cmath>

namespace lra {

using namespace dl;
using nn::LayerConfig;

static bool is_ssm(const std::string& m) { return m == "s4" || m == "s4d" || m == "s4d_minimal" || m == "dlr"; }

// The registry layer and its config for each model name; `layer_cfg` (JSON) is merged last.
static std::pair<std::string, LayerConfig> mixer_spec(const CellConfig& c, bool causal) {
  std::string name = c.model == "transformer" ? "attention" : c.model;
  LayerConfig l = LayerConfig::object();
  if (c.model == "transformer") {
    l = {{"heads", c.heads}, {"dropout", c.dropout}, {"causal", causal}, {"rotary", c.pos == "rotary"}};
    if (c.window > 0) l["window"] = c.window;
  } else if (c.model == "s4d_minimal") {
    l = {{"d_state", c.d_state}, {"dropout", c.dropout}};
  } else if (is_ssm(c.model)) {
    // bidirectional unless the regime is causal (Amos et al.: causal SPT makes S4 unidirectional)
    l = {{"d_state", c.d_state}, {"dropout", c.dropout}, {"bidirectional", !causal}};
  }
  if (!c.layer_cfg.empty()) l.update(LayerConfig::parse(c.layer_cfg));
  return {name, l};
}

static std::shared_ptr<nn::Module> make_norm(const CellConfig& c) {
  if (c.norm == "batch") return std::make_shared<nn::BatchNorm1d>(c.d_model);
  return std::make_shared<nn::LayerNorm>(c.d_model);
}

Block::Block(const CellConfig& c, bool causal, Generator& g) : prenorm_(c.prenorm), batchnorm_(c.norm == "batch") {
  auto [name, lc] = mixer_spec(c, causal);
  mixer_ = register_module("mixer", nn::make_layer(name, c.d_model, lc, g));
  norm1_ = register_module("norm1", make_norm(c));
  if (!is_ssm(c.model) && c.ffn_mult > 0) {  // SSM blocks carry their own GLU output projection instead
    norm2_ = register_module("norm2", make_norm(c));
    ffn_ = register_module("ffn", std::make_shared<nn::FeedForward>(c.d_model, c.d_model * c.ffn_mult, c.dropout, g));
  }
  drop_ = register_module("drop", std::make_shared<nn::Dropout>(c.dropout, g));
}

Var Block::norm(const std::shared_ptr<nn::Module>& n, const Var& x) {
  if (!batchnorm_) return static_cast<nn::LayerNorm&>(*n).forward(x);
  // BatchNorm1d normalises channels of (B, C, L): move D to the channel dim and back
  return transpose(static_cast<nn::BatchNorm1d&>(*n).forward(transpose(x, 1, 2)), 1, 2);
}

Var Block::forward(const Var& x0, const Tensor& mask) {
  Var x = x0;
  if (prenorm_) {
    x = x + drop_->forward(mixer_->forward(norm(norm1_, x), mask));
    if (ffn_) x = x + drop_->forward(ffn_->forward(norm(norm2_, x)));
  } else {
    x = norm(norm1_, x + drop_->forward(mixer_->forward(x, mask)));
    if (ffn_) x = norm(norm2_, x + drop_->forward(ffn_->forward(x)));
  }
  return x;
}

LraModel::LraModel(const CellConfig& c, const TaskShape& t, bool causal, Generator& g) : cfg(c), shape(t) {
  int64_t D = c.d_model;
  if (t.vocab > 0) embed_ = register_module("embed", std::make_shared<nn::Embedding>(t.vocab + 1, D, g));
  else in_proj_ = register_module("in_proj", std::make_shared<nn::Linear>(t.features + 1, D, g));
  if (c.model == "transformer" && c.pos == "learned") pos_ = register_parameter("pos", nn::init::normal({t.max_len, D}, 0.02, g));
  if (c.model == "transformer" && c.pos == "sinusoidal") sinusoid_ = nn::sinusoidal_table(t.max_len, D);
  blocks_ = register_module("blocks", std::make_shared<nn::ModuleList<Block>>());
  for (int i = 0; i < c.layers; i++) blocks_->push_back(std::make_shared<Block>(c, causal, g));
  final_norm_ = register_module("final_norm", make_norm(c));
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
  Var x = embed_ ? embed_->forward(in.tokens) : in_proj_->forward(Var(in.features));  // (B, L, D)
  int64_t L = x.size(1);
  if (L > shape.max_len && (pos_.defined() || sinusoid_.defined()))
    fail("LraModel: sequence of length " + std::to_string(L) + " is longer than the positions table (" + std::to_string(shape.max_len) + ")");
  if (pos_.defined()) x = x + narrow(pos_, 0, 0, L);
  if (sinusoid_.defined()) x = x + Var(sinusoid_.narrow(0, 0, L));
  x = drop_->forward(x);
  for (auto& b : blocks_->items()) x = b->forward(x, in.mask);
  if (cfg.norm == "batch")
    return transpose(static_cast<nn::BatchNorm1d&>(*final_norm_).forward(transpose(x, 1, 2)), 1, 2);
  return static_cast<nn::LayerNorm&>(*final_norm_).forward(x);
}

Var LraModel::pool(const Var& h, const Tensor& mask, const std::string& how) {
  int64_t B = h.size(0), L = h.size(1);
  Tensor m = mask.defined() ? mask : ones({B, L});
  if (how == "last") {  // the last real position of each sequence
    Tensor mc = m.to(DType::f32).contiguous();
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
  Tensor m3 = m.unsqueeze(2);                                   // (B, L, 1)
  Tensor count = clamp(sum(m, {1}, true), 1.0, 1e30);           // (B, 1)
  return div(sum(mul(h, Var(m3)), {1}), Var(count));            // (B, D)
}

Var LraModel::classify(const Inputs& a, const Inputs* b) {
  Var pa = pool(encode(a), a.mask, cfg.pool);
  if (!shape.two_tower) return head_->forward(pa);
  if (!b) fail("LraModel: the retrieval head needs two sequences");
  Var pb = pool(encode(*b), b->mask, cfg.pool);
  Var feats = cat({pa, pb, pa * pb, pa - pb}, 1);              // (B, 4D)
  return head_->forward(gelu(head2_->forward(feats)));
}

Var LraModel::pretrain_logits(const Var& h) { return pretrain_head_->forward(h); }

}  // namespace lra
