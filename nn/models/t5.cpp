// nn/models/t5.cpp - T5 (math and names in nn/models/t5.h).
#include "nn/models/t5.h"

#include <cmath>
#include <functional>
#include <tuple>

#include "autograd/linalg.h"
#include "autograd/shape_ops.h"
#include "nn/init.h"

namespace dl::nn {

int64_t t5_relative_bucket(int64_t rp, bool bidirectional, int64_t nb, int64_t max_distance) {
  int64_t ret = 0;
  if (bidirectional) {
    nb /= 2;
    if (rp > 0) ret += nb;
    rp = std::abs(rp);
  } else {
    rp = -std::min<int64_t>(rp, 0);
  }
  const int64_t max_exact = nb / 2;
  if (rp < max_exact) return ret + rp;
  // in float32 as HF computes it, so bucket edges fall where they do there
  float scaled =
      std::log((float)rp / (float)max_exact) / (float)std::log((double)max_distance / max_exact) * (float)(nb - max_exact);
  return ret + std::min<int64_t>(max_exact + (int64_t)scaled, nb - 1);
}

T5Attention::T5Attention(const T5Config& c, bool has_bias, bool bi, Generator& g) : cfg(c), bidirectional(bi) {
  const int64_t inner = c.num_heads * c.d_kv;
  q = register_module("q", std::make_shared<Linear>(c.d_model, inner, g, false));
  k = register_module("k", std::make_shared<Linear>(c.d_model, inner, g, false));
  v = register_module("v", std::make_shared<Linear>(c.d_model, inner, g, false));
  o = register_module("o", std::make_shared<Linear>(inner, c.d_model, g, false));
  if (has_bias)
    relative_attention_bias =
        register_module("relative_attention_bias", std::make_shared<Embedding>(c.num_buckets, c.num_heads, g));
}

Var T5Attention::position_bias(int64_t T, int64_t S) const {
  if (!relative_attention_bias) fail("T5Attention: this block has no relative_attention_bias table");
  Tensor buckets = zeros({T, S}, DType::i64);
  for (int64_t t = 0; t < T; t++)
    for (int64_t s = 0; s < S; s++)
      buckets.data<int64_t>()[t * S + s] = t5_relative_bucket(s - t, bidirectional, cfg.num_buckets, cfg.max_distance);
  return unsqueeze(permute(relative_attention_bias->forward(buckets), {2, 0, 1}), 0);  // (T, S, NH) -> (1, NH, T, S)
}

Var T5Attention::forward(const Var& x, const Var& kv, const Var& bias, const Tensor& key_mask, bool causal) const {
  SDPAOptions opt;
  opt.key_mask = key_mask;
  opt.causal = causal;
  opt.bias = bias;
  opt.scale = false;
  Var w;
  Var y = scaled_dot_product_attention(split_heads(q->forward(x), cfg.num_heads), split_heads(k->forward(kv), cfg.num_heads),
                                       split_heads(v->forward(kv), cfg.num_heads), opt,
                                       record_weights ? &w : nullptr);  // (B, NH, T, HS)
  if (record_weights) record_weights->push_back(w);
  return o->forward(merge_heads(y));
}

Var T5Attention::position_bias_row(int64_t t) const {
  if (!relative_attention_bias) fail("T5Attention: this block has no relative_attention_bias table");
  if (t < 0) fail("T5Attention: position_bias_row needs a position >= 0, found " + std::to_string(t));
  Tensor buckets = zeros({1, t + 1}, DType::i64);  // bucket(s - t) for the keys s = 0..t
  for (int64_t s = 0; s <= t; s++)
    buckets.data<int64_t>()[s] = t5_relative_bucket(s - t, bidirectional, cfg.num_buckets, cfg.max_distance);
  return unsqueeze(permute(relative_attention_bias->forward(buckets), {2, 0, 1}), 0);  // (1, t+1, NH) -> (1, NH, 1, t+1)
}

std::pair<Tensor, Tensor> T5Attention::keys_values(const Var& kv) const {
  if (kv.dim() != 3 || kv.size(2) != cfg.d_model)
    fail("T5Attention: keys_values expects (B, S, " + std::to_string(cfg.d_model) + "), found " + shape_str(kv.shape()));
  return {split_heads(k->forward(kv), cfg.num_heads).data(), split_heads(v->forward(kv), cfg.num_heads).data()};
}

Var T5Attention::attend_cached(const Var& x, const Tensor& K, const Tensor& V, const Var& bias, const Tensor& key_mask) const {
  if (x.dim() != 2 || x.size(1) != cfg.d_model)
    fail("T5Attention: a step takes one position (B, " + std::to_string(cfg.d_model) + "), found " + shape_str(x.shape()));
  SDPAOptions opt;
  opt.key_mask = key_mask;
  opt.bias = bias;
  opt.scale = false;
  Var qh = split_heads(q->forward(unsqueeze(x, 1)), cfg.num_heads);      // (B, NH, 1, HS)
  Var y = scaled_dot_product_attention(qh, Var(K), Var(V), opt);         // (B, NH, 1, HS)
  return reshape(o->forward(merge_heads(y)), {x.size(0), cfg.d_model});  // (B, C)
}

Var T5Attention::step(const Var& x, Tensor& K, Tensor& V, const Var& bias) const {
  auto [kt, vt] = keys_values(unsqueeze(x, 1));             // (B, NH, 1, HS) each
  K = K.defined() ? cat({Var(K), Var(kt)}, 2).data() : kt;  // (B, NH, t + 1, HS)
  V = V.defined() ? cat({Var(V), Var(vt)}, 2).data() : vt;
  return attend_cached(x, K, V, bias, Tensor());  // every cached key is at or before the query: no mask
}

namespace {

struct DenseReluDense : Module {
  DenseReluDense(const T5Config& c, Generator& g) {
    wi = register_module("wi", std::make_shared<Linear>(c.d_model, c.d_ff, g, false));
    wo = register_module("wo", std::make_shared<Linear>(c.d_ff, c.d_model, g, false));
  }
  std::string type_name() const override { return "DenseReluDense"; }
  std::shared_ptr<Linear> wi, wo;
};

// one sub-layer: layer_norm plus either an attention (under `attn_name`) or the feed-forward
struct SubLayer : Module {
  SubLayer(const T5Config& c, const std::string& attn_name, bool has_bias, bool bi, Generator& g) {
    if (attn_name.empty()) ff = register_module("DenseReluDense", std::make_shared<DenseReluDense>(c, g));
    else attn = register_module(attn_name, std::make_shared<T5Attention>(c, has_bias, bi, g));
    layer_norm = register_module("layer_norm", std::make_shared<RMSNorm>(c.d_model, c.eps));
  }
  std::string type_name() const override { return attn ? "T5LayerAttention" : "T5LayerFF"; }
  std::shared_ptr<T5Attention> attn;
  std::shared_ptr<DenseReluDense> ff;
  std::shared_ptr<RMSNorm> layer_norm;
};

struct Block : Module {
  Block(const T5Config& c, bool decoder, bool first, Generator& g) {
    layer = register_module("layer", std::make_shared<ModuleList<SubLayer>>());
    layer->push_back(std::make_shared<SubLayer>(c, "SelfAttention", first, !decoder, g));
    if (decoder) layer->push_back(std::make_shared<SubLayer>(c, "EncDecAttention", false, true, g));
    layer->push_back(std::make_shared<SubLayer>(c, "", false, true, g));
  }
  std::string type_name() const override { return "T5Block"; }
  std::shared_ptr<ModuleList<SubLayer>> layer;
};

}  // namespace

struct T5Model::Stack : Module {
  Stack(const T5Config& c, bool dec, Generator& g) : decoder(dec) {
    block = register_module("block", std::make_shared<ModuleList<Block>>());
    for (int64_t i = 0; i < c.num_layers; i++) block->push_back(std::make_shared<Block>(c, dec, i == 0, g));
    final_layer_norm = register_module("final_layer_norm", std::make_shared<RMSNorm>(c.d_model, c.eps));
  }
  std::string type_name() const override { return decoder ? "T5Decoder" : "T5Encoder"; }
  // h (B, T, C); mask (B, T) for the encoder's keys; enc/enc_mask for the decoder's cross-attention
  Var forward(Var h, const Tensor& mask, const Var& enc, const Tensor& enc_mask) {
    const int64_t T = h.size(1);
    Var bias = (*block)[0].layer->items()[0]->attn->position_bias(T, T);  // shared by every block
    for (auto& b : block->items()) {
      auto& ly = b->layer->items();
      Var n = ly[0]->layer_norm->forward(h);
      h = h + ly[0]->attn->forward(n, n, bias, mask, decoder);
      if (decoder) h = h + ly[1]->attn->forward(ly[1]->layer_norm->forward(h), enc, Var(), enc_mask, false);
      auto& ff = ly.back();
      h = h + ff->ff->wo->forward(relu(ff->ff->wi->forward(ff->layer_norm->forward(h))));
    }
    return final_layer_norm->forward(h);
  }
  // The decoder at target position s.pos: h (B, C) -> (B, C), forward's row s.pos (the caches in s grow by one).
  Var step(Var h, T5DecodeState& s) {
    Var bias = (*block)[0].layer->items()[0]->attn->position_bias_row(s.pos);  // (1, NH, 1, pos + 1), every block's
    for (size_t i = 0; i < block->size(); i++) {
      auto& ly = (*block)[i].layer->items();
      T5DecodeState::Block& bs = s.blocks[i];
      h = h + ly[0]->attn->step(ly[0]->layer_norm->forward(h), bs.self_k, bs.self_v, bias);
      h = h + ly[1]->attn->attend_cached(ly[1]->layer_norm->forward(h), bs.cross_k, bs.cross_v, Var(), s.enc_mask);
      auto& ff = ly.back();
      h = h + ff->ff->wo->forward(relu(ff->ff->wi->forward(ff->layer_norm->forward(h))));
    }
    return final_layer_norm->forward(h);
  }
  std::shared_ptr<ModuleList<Block>> block;
  std::shared_ptr<RMSNorm> final_layer_norm;
  bool decoder;
};

T5Model::T5Model(const T5Config& c, Generator& g) : cfg(c) {
  shared = register_module("shared", std::make_shared<Embedding>(c.vocab_size, c.d_model, g));
  encoder = register_module("encoder", std::make_shared<Stack>(c, false, g));
  decoder = register_module("decoder", std::make_shared<Stack>(c, true, g));
}

Var T5Model::encode(const Tensor& ids, const Tensor& mask) {
  return encoder->forward(shared->forward(ids), mask, Var(), Tensor());
}

Var T5Model::decode_logits(const Tensor& dec_in, const Var& enc, const Tensor& enc_mask) {
  Var h = decoder->forward(shared->forward(dec_in), Tensor(), enc, enc_mask);               // (B, T, C)
  return matmul(h * std::pow((double)cfg.d_model, -0.5), transpose(shared->weight, 0, 1));  // (B, T, V)
}

T5Model::Output T5Model::forward(const Tensor& ids, const Tensor& mask, const Tensor& labels) {
  if (labels.dim() != 2 || labels.dtype() != DType::i64)
    fail("T5Model: labels must be (B, T) i64, found " + shape_str(labels.shape()));
  const int64_t B = labels.size(0), T = labels.size(1);
  // decoder input: labels shifted right, start token 0, -100 -> 0
  Tensor dec_in = zeros({B, T}, DType::i64);
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 1; t < T; t++) {
      int64_t y = (int64_t)labels.at({b, t - 1});
      dec_in.data<int64_t>()[b * T + t] = y == -100 ? 0 : y;
    }
  Output out;
  out.logits = decode_logits(dec_in, encode(ids, mask), mask);
  out.loss = cross_entropy(reshape(out.logits, {B * T, cfg.vocab_size}), labels.reshape({B * T}), -100);
  return out;
}

// ---- decoding as a recurrence (nn/models/t5.h) ----
T5DecodeState T5Model::start_decode(const Var& enc, const Tensor& enc_mask) {
  if (enc.dim() != 3 || enc.size(2) != cfg.d_model)
    fail("T5Model: start_decode expects the encoder output (B, S, " + std::to_string(cfg.d_model) + "), found " +
         shape_str(enc.shape()));
  const int64_t B = enc.size(0), S = enc.size(1);
  if (enc_mask.defined() && enc_mask.shape() != Shape{B, S})
    fail("T5Model: start_decode's encoder mask must be (B, S) = " + shape_str({B, S}) + ", found " + shape_str(enc_mask.shape()));
  T5DecodeState s;
  s.enc_mask = enc_mask, s.batch = B;
  for (auto& b : decoder->block->items()) {
    T5DecodeState::Block bs;
    std::tie(bs.cross_k, bs.cross_v) = b->layer->items()[1]->attn->keys_values(enc);  // once per source
    s.blocks.push_back(std::move(bs));
  }
  return s;
}

Var T5Model::decode_step(const Tensor& token_ids, T5DecodeState& s) {
  if (token_ids.dim() != 1 || token_ids.dtype() != DType::i64)
    fail("T5Model: decode_step takes one token id per sequence (B) i64, found " + shape_str(token_ids.shape()) + " " +
         dtype_name(token_ids.dtype()));
  if (s.blocks.size() != decoder->block->size() || token_ids.size(0) != s.batch)
    fail("T5Model: the decode state does not come from start_decode for this model and a batch of " +
         std::to_string(token_ids.size(0)));
  Var h = decoder->step(shared->forward(token_ids), s);  // (B, C)
  s.pos++;
  return matmul(h * std::pow((double)cfg.d_model, -0.5), transpose(shared->weight, 0, 1));  // (B, V)
}

// Greedy's bookkeeping, however the logits are computed: next(seq) gives (B, V) for the position after each row's
// last token (seq[b] starts with the start id 0); returns the tokens after the start id, (B, steps).
using T5NextLogits = std::function<Tensor(const std::vector<std::vector<int64_t>>&)>;
static Tensor t5_greedy_loop(int64_t B, int64_t steps, const T5NextLogits& next_logits) {
  std::vector<std::vector<int64_t>> seq(B, std::vector<int64_t>{0});
  for (int64_t s = 0; s < steps; s++) {
    Tensor next = argmax(next_logits(seq), -1).to(Device::cpu);  // (B)
    for (int64_t b = 0; b < B; b++) seq[b].push_back((int64_t)next.at({b}));
  }
  Tensor out = zeros({B, steps}, DType::i64);
  for (int64_t b = 0; b < B; b++)
    for (int64_t s = 0; s < steps; s++) out.data<int64_t>()[b * steps + s] = seq[b][s + 1];
  return out;
}

Tensor T5Model::greedy(const Tensor& ids, const Tensor& mask, int64_t steps) {
  NoGradGuard ng;
  const int64_t B = ids.size(0);
  T5DecodeState st = start_decode(encode(ids, mask), mask);
  return t5_greedy_loop(B, steps, [&](const std::vector<std::vector<int64_t>>& seq) {
    Tensor last = Tensor::empty({B}, DType::i64);  // each row's newest token: the decoder's input at st.pos
    for (int64_t b = 0; b < B; b++) last.data<int64_t>()[b] = seq[b].back();
    return decode_step(last, st).data();  // (B, V)
  });
}

Tensor T5Model::greedy_by_recompute(const Tensor& ids, const Tensor& mask, int64_t steps) {
  NoGradGuard ng;
  const int64_t B = ids.size(0);
  Var enc = encode(ids, mask);
  return t5_greedy_loop(B, steps, [&](const std::vector<std::vector<int64_t>>& seq) {
    const int64_t T = (int64_t)seq[0].size();
    Tensor dec_in = zeros({B, T}, DType::i64);  // the whole prefix, every time
    for (int64_t b = 0; b < B; b++)
      for (int64_t t = 0; t < T; t++) dec_in.data<int64_t>()[b * T + t] = seq[b][t];
    return decode_logits(dec_in, enc, mask).data().select(1, T - 1);  // (B, V)
  });
}

}  // namespace dl::nn
