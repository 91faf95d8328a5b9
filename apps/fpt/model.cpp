// apps/fpt/model.cpp - see model.h.
#include "model.h"

#include "nn/registry.h"

#include "nn/init.h"

namespace fpt {

using namespace dl;

nn::GPT2Config gpt2_config(const CellConfig& c) {
  nn::GPT2Config g;
  g.vocab_size = 256;  // the LM is byte-level; FPT itself never uses wte
  g.n_positions = 1024, g.n_embd = c.d_model, g.n_layer = c.layers, g.n_head = c.heads, g.dropout = c.dropout;
  return g;
}

FptModel::FptModel(const CellConfig& c, const FptTask& t, Generator& g) : cfg(c) {
  shape.vocab = t.vocab, shape.features = t.features, shape.readout = t.readout, shape.outputs = t.outputs;
  shape.max_len = t.max_len, shape.bits = t.bits, shape.patch = t.patch;
  const int64_t D = c.d_model;
  if (t.vocab > 0) {
    in_embed_ = register_module("input", std::make_shared<nn::Embedding>(t.vocab, D, g));
  } else {
    in_linear_ = register_module("input", std::make_shared<nn::Linear>(t.features, D, g));
    in_linear_->weight.mutable_data().copy_(nn::init::orthogonal({D, t.features}, g, 1.41));  // fpt.py: orth_gain 1.41
    in_linear_->bias.mutable_data().zero_();
  }
  in_drop_ = register_module("input_dropout", std::make_shared<nn::Dropout>(c.dropout, g));
  if (c.arm == "lstm") {
    // the registry's "lstm", as every app builds its layers: the paper's LNLSTM is its layer-norm variant
    lstm_ = register_module("lstm", nn::make_layer("lstm", D, {{"num_layers", c.lstm_layers}, {"layer_norm", true}}, g));
  } else {
    nn::GPT2Config gc = gpt2_config(c);
    if (t.max_len > gc.n_positions)
      throw ConfigError(c.key() + ": sequences of " + std::to_string(t.max_len) + " tokens exceed GPT-2's 1024 positions");
    // GPT2Model's initialisation (N(0, 0.02), scaled residual projections): the random arms start where the LM did
    nn::GPT2Model lm(gc, g);
    transformer_ = register_module("transformer", lm.transformer);
  }
  output_ = register_module("output", std::make_shared<nn::Linear>(D, t.outputs, g));
}

Var FptModel::forward(const FptBatch& b, std::vector<Var>* attention) {
  // the batch is built on the host; on a device run (--device cuda) the features follow the model there (token ids are
  // moved by the embedding, the read-out indices by index_select, the targets by cross_entropy)
  const Device dev = output_->weight.data().device();
  Var x = in_embed_ ? in_embed_->forward(b.tokens)
                    : in_drop_->forward(in_linear_->forward(Var(b.features.to(dev))));  // (B, T, D)
  x = transformer_ ? transformer_->forward_embeds(x, attention) : lstm_->forward(x, Tensor());
  const int64_t B = x.size(0), T = x.size(1), R = shape.readout;
  if (cfg.masked_readout && !shape.bits) {  // each sequence's last real position
    std::vector<int64_t> idx(B);
    Tensor m = b.mask.contiguous();
    for (int64_t i = 0; i < B; i++) {
      int64_t last = 0;
      for (int64_t s = 0; s < T; s++)
        if (m.data<float>()[i * T + s] != 0) last = s;
      idx[i] = i * T + last;
    }
    Var rows = index_select(reshape(x, {B * T, x.size(2)}), 0, from_vector(idx, {B}));
    return reshape(output_->forward(rows), {B, 1, shape.outputs});
  }
  return output_->forward(narrow(x, 1, T - R, R));  // (B, R, outputs)
}

Var FptModel::loss(const FptBatch& b) {
  Var logits = forward(b);  // (B, R, outputs)
  const int64_t B = logits.size(0);
  if (shape.bits) return cross_entropy(reshape(logits, {B * shape.readout * shape.patch, 2}), b.targets.reshape({-1}));
  return cross_entropy(reshape(logits, {B, shape.outputs}), b.targets);
}

int64_t FptModel::correct(const FptBatch& b, int64_t* counted) {
  Var logits = forward(b);
  const int64_t B = logits.size(0);
  Tensor pred = shape.bits ? argmax(reshape(logits, {B * shape.readout * shape.patch, 2}), 1)
                           : argmax(reshape(logits, {B, shape.outputs}), 1);
  pred = pred.to(Device::cpu).contiguous();  // counted on the host
  Tensor target = b.targets.reshape({-1}).contiguous();
  int64_t right = 0;
  for (int64_t i = 0; i < pred.numel(); i++) right += pred.data<int64_t>()[i] == target.data<int64_t>()[i];
  *counted += pred.numel();
  return right;
}

bool FptModel::trainable_rule(const std::string& arm, const std::string& name) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  const bool in = name.starts_with("input"), out = name.starts_with("output");
  const bool pos = has("wpe"), ln = has(".ln_"), mlp = has(".mlp."), attn = has(".attn."), wte = has("wte");
  if (wte) return false;  // FPT feeds embeddings: wte is never used
  if (arm == "full" || arm == "full_lang" || arm == "lstm") return true;
  if (arm == "out_only") return out;
  if (arm == "out_in") return out || in;
  if (arm == "out_in_pos") return out || in || pos;
  const bool fpt_set = out || in || pos || ln;  // fpt, random, bitmem
  if (arm == "fpt_ff") return fpt_set || mlp;
  if (arm == "fpt_attn") return fpt_set || attn;
  return fpt_set;
}

int FptModel::freeze() {
  const std::string arm = cfg.arm;
  return set_requires_grad([&](const std::string& n) { return !trainable_rule(arm, n); }, false);
}

}  // namespace fpt
