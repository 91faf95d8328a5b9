// nn/models/seq2seq.cpp - the mixer-by-name encoder-decoder (math in nn/models/seq2seq.h).
#include "nn/models/seq2seq.h"

#include <cmath>
#include <functional>
#include <tuple>

#include "autograd/linalg.h"
#include "autograd/shape_ops.h"
#include "nn/attention/attention.h"
#include "nn/init.h"
#include "nn/onnx/ops.h"
#include "nn/registry.h"

namespace dl::nn {

T5Config Seq2SeqConfig::t5() const {
  T5Config t;
  t.vocab_size = vocab_size, t.d_model = d_model, t.d_ff = d_ff, t.num_heads = num_heads, t.d_kv = d_model / num_heads;
  t.num_buckets = num_buckets, t.max_distance = max_distance, t.eps = eps;
  return t;
}

static int64_t per_layer(const std::vector<int64_t>& v, size_t i) { return v.empty() ? 1 : v[std::min(i, v.size() - 1)]; }

static void init_t5_attention(T5Attention& a, const T5Config& c, Generator& g) {
  const double dk = (double)c.d_kv;
  a.q->weight.mutable_data().copy_(init::normal(a.q->weight.shape(), std::pow(c.d_model * dk, -0.5), g));
  a.k->weight.mutable_data().copy_(init::normal(a.k->weight.shape(), std::pow((double)c.d_model, -0.5), g));
  a.v->weight.mutable_data().copy_(init::normal(a.v->weight.shape(), std::pow((double)c.d_model, -0.5), g));
  a.o->weight.mutable_data().copy_(init::normal(a.o->weight.shape(), std::pow(c.num_heads * dk, -0.5), g));
}

struct BlockValues;

// One block: the mixer sub-layer ("attention" for the transformer and the pair block, "mixer" for a registry layer),
// [decoder: "cross"], the feed-forward; each with its norm.
struct Seq2SeqModel::Block : Module {
  enum Kind { encoder_block, decoder_block, pair };
  Block(const Seq2SeqConfig& c, Kind kind, size_t index, Generator& g) : kind(kind) {
    const T5Config t = c.t5();
    norm_mix = register_module("norm_mix", std::make_shared<RMSNorm>(c.d_model, c.eps));
    if (kind == pair || c.mixer == "transformer") {
      attention =
          register_module("attention", std::make_shared<T5Attention>(t, kind != pair && index == 0, kind == encoder_block, g));
      init_t5_attention(*attention, t, g);
    } else {
      const LayerEntry& e = find_layer(c.mixer);
      BackboneOptions bo;
      bo.causal = kind == decoder_block;
      LayerConfig lc = backbone_config(e, bo);
      if (e.takes("kernel_size")) lc["kernel_size"] = per_layer(c.kernel_sizes, index);
      if (e.takes("dilation")) lc["dilation"] = per_layer(c.dilations, index);
      if (e.takes("num_heads")) lc["num_heads"] = c.num_heads;
      mixer = register_module("mixer", e.make(c.d_model, lc, g));
      if (kind == decoder_block && !mixer->is_causal())
        fail("Seq2SeqModel: mixer '" + c.mixer + "' cannot run causally, so it cannot be a decoder's mixer");
    }
    if (kind == decoder_block) {
      norm_cross = register_module("norm_cross", std::make_shared<RMSNorm>(c.d_model, c.eps));
      cross = register_module("cross", std::make_shared<T5Attention>(t, false, true, g));
      init_t5_attention(*cross, t, g);
    }
    norm_ff = register_module("norm_ff", std::make_shared<RMSNorm>(c.d_model, c.eps));
    wi = register_module("wi", std::make_shared<Linear>(c.d_model, c.d_ff, g, false));
    wo = register_module("wo", std::make_shared<Linear>(c.d_ff, c.d_model, g, false));
    wi->weight.mutable_data().copy_(init::normal(wi->weight.shape(), std::pow((double)c.d_model, -0.5), g));
    wo->weight.mutable_data().copy_(init::normal(wo->weight.shape(), std::pow((double)c.d_ff, -0.5), g));
  }
  std::string type_name() const override { return "Seq2SeqBlock"; }

  // bias: the attention's (relative position or pair mask); mask: this stack's padding (B, L) or undefined.
  Var forward(Var h, const Tensor& mask, const Var& bias, const Var& enc, const Tensor& enc_mask) {
    Var n = norm_mix->forward(h);
    if (attention) h = h + attention->forward(n, n, bias, kind == pair ? Tensor() : mask, kind == decoder_block);
    else h = h + mixer->forward(n, mask);
    if (cross) h = h + cross->forward(norm_cross->forward(h), enc, Var(), enc_mask, false);
    return h + wo->forward(relu(wi->forward(norm_ff->forward(h))));
  }

  // One target position (decoder blocks; Seq2SeqModel::decode_step): h (B, C) -> (B, C), as forward's row t.
  Var step(Var h, DecodeState::Block& s, const Var& bias, const Tensor& enc_mask) {
    Var n = norm_mix->forward(h);
    if (attention) h = h + attention->step(n, s.self_k, s.self_v, bias);
    else h = h + mixer->step(n, s.mixer);
    h = h + cross->attend_cached(norm_cross->forward(h), s.cross_k, s.cross_v, Var(), enc_mask);
    return h + wo->forward(relu(wi->forward(norm_ff->forward(h))));
  }

  // The same block as ONNX operators (see "ONNX export" below); the values as forward's arguments.
  std::string export_onnx(onnx::Graph& g, std::string h, const BlockValues& in, const std::string& prefix) const;

  Kind kind;
  std::shared_ptr<RMSNorm> norm_mix, norm_cross, norm_ff;
  std::shared_ptr<T5Attention> attention, cross;
  std::shared_ptr<SequenceLayer> mixer;
  std::shared_ptr<Linear> wi, wo;
};

Seq2SeqModel::Seq2SeqModel(const Seq2SeqConfig& c, Generator& g) : cfg(c) {
  if (c.d_model % c.num_heads)
    fail("Seq2SeqModel: d_model " + std::to_string(c.d_model) + " is not divisible by num_heads " + std::to_string(c.num_heads));
  if (c.num_layers < 1 || c.num_decoder_layers < 1) fail("Seq2SeqModel: the encoder and the decoder need at least one layer");
  shared = register_module("shared", std::make_shared<Embedding>(c.vocab_size, c.d_model, g));
  shared->weight.mutable_data().copy_(init::normal(shared->weight.shape(), 1.0, g));
  encoder = register_module("encoder", std::make_shared<ModuleList<Block>>());
  for (int64_t i = 0; i < c.num_layers; i++) encoder->push_back(std::make_shared<Block>(c, Block::encoder_block, i, g));
  if (c.pair_attention) pair_block = register_module("pair_block", std::make_shared<Block>(c, Block::pair, 0, g));
  encoder_norm = register_module("encoder_norm", std::make_shared<RMSNorm>(c.d_model, c.eps));
  decoder = register_module("decoder", std::make_shared<ModuleList<Block>>());
  for (int64_t i = 0; i < c.num_decoder_layers; i++) decoder->push_back(std::make_shared<Block>(c, Block::decoder_block, i, g));
  decoder_norm = register_module("decoder_norm", std::make_shared<RMSNorm>(c.d_model, c.eps));
}

// The pair block's additive bias (B, 1, S, S): 0 where query and key lie in different segments and the key is
// real, -1e9 elsewhere (a query with no allowed key - padding - gets a uniform row, harmless as it is masked later).
// Built on the host from the host batch, then put on `device`, where the scores are.
static Var pair_bias(const Tensor& segments, const Tensor& mask, Device device) {
  const int64_t B = segments.size(0), S = segments.size(1);
  Tensor b = zeros({B, 1, S, S});
  const int64_t* sg = segments.data<int64_t>();
  const float* m = mask.defined() ? mask.data<float>() : nullptr;
  float* o = b.data<float>();
  for (int64_t i = 0; i < B; i++)
    for (int64_t t = 0; t < S; t++)
      for (int64_t s = 0; s < S; s++) {
        const bool ok = sg[i * S + t] != sg[i * S + s] && (!m || m[i * S + s] != 0);
        o[(i * S + t) * S + s] = ok ? 0.f : -1e9f;
      }
  return Var(b.to(device));
}

Var Seq2SeqModel::encode(const Tensor& ids, const Tensor& mask, const Tensor& segments) {
  if (ids.dim() != 2 || ids.dtype() != DType::i64) fail("Seq2SeqModel: ids must be (B, S) i64, found " + shape_str(ids.shape()));
  const int64_t S = ids.size(1);
  Var h = shared->forward(ids);
  Var bias = encoder->items()[0]->attention ? encoder->items()[0]->attention->position_bias(S, S) : Var();
  for (auto& b : encoder->items()) h = b->forward(h, mask, bias, Var(), Tensor());
  if (pair_block) {
    if (!segments.defined() || segments.shape() != ids.shape())
      fail("Seq2SeqModel: pair_attention needs segments of the ids' shape " + shape_str(ids.shape()) + ", found " +
           (segments.defined() ? shape_str(segments.shape()) : std::string("none")));
    h = pair_block->forward(h, mask, pair_bias(segments, mask, h.data().device()), Var(), Tensor());
  }
  return encoder_norm->forward(h);
}

Var Seq2SeqModel::decode_logits(const Tensor& dec_in, const Var& enc, const Tensor& enc_mask) {
  const int64_t T = dec_in.size(1);
  Var h = shared->forward(dec_in);
  Var bias = decoder->items()[0]->attention ? decoder->items()[0]->attention->position_bias(T, T) : Var();
  for (auto& b : decoder->items()) h = b->forward(h, Tensor(), bias, enc, enc_mask);
  h = decoder_norm->forward(h);
  return matmul(h * std::pow((double)cfg.d_model, -0.5), transpose(shared->weight, 0, 1));
}

Tensor shift_right(const Tensor& labels) {
  if (labels.dim() != 2 || labels.dtype() != DType::i64)
    fail("shift_right: labels must be (B, T) i64, found " + shape_str(labels.shape()));
  const int64_t B = labels.size(0), T = labels.size(1);
  Tensor dec_in = zeros({B, T}, DType::i64);
  const int64_t* y = labels.data<int64_t>();
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 1; t < T; t++) dec_in.data<int64_t>()[b * T + t] = y[b * T + t - 1] == -100 ? 0 : y[b * T + t - 1];
  return dec_in;
}

Seq2SeqModel::Output Seq2SeqModel::forward(const Tensor& ids, const Tensor& mask, const Tensor& labels, const Tensor& segments) {
  Tensor dec_in = shift_right(labels);
  const int64_t B = labels.size(0), T = labels.size(1);
  Output out;
  out.logits = decode_logits(dec_in, encode(ids, mask, segments), mask);
  out.loss = cross_entropy(reshape(out.logits, {B * T, cfg.vocab_size}), labels.reshape({B * T}), -100);
  return out;
}

// ---- decoding as a recurrence (nn/models/seq2seq.h) ----
DecodeState Seq2SeqModel::start_decode(const Var& enc, const Tensor& enc_mask) {
  if (enc.dim() != 3 || enc.size(2) != cfg.d_model)
    fail("Seq2SeqModel: start_decode expects the encoder output (B, S, " + std::to_string(cfg.d_model) + "), found " +
         shape_str(enc.shape()));
  const int64_t B = enc.size(0), S = enc.size(1);
  if (enc_mask.defined() && enc_mask.shape() != Shape{B, S})
    fail("Seq2SeqModel: start_decode's encoder mask must be (B, S) = " + shape_str({B, S}) + ", found " +
         shape_str(enc_mask.shape()));
  DecodeState s;
  s.enc_mask = enc_mask, s.batch = B;
  for (size_t i = 0; i < decoder->size(); i++) {
    Block& b = (*decoder)[i];
    DecodeState::Block bs;
    std::tie(bs.cross_k, bs.cross_v) = b.cross->keys_values(enc);  // (B, NH, S, HS) each, once per source
    if (b.mixer) {
      try {
        bs.mixer = b.mixer->start_stream(B);  // the layer's own state (its refusal names it)
      } catch (const std::exception& e) {
        fail("Seq2SeqModel: decoder block " + std::to_string(i) + "'s mixer '" + cfg.mixer +
             "' cannot decode one position at a time: " + e.what());
      }
    }
    s.blocks.push_back(std::move(bs));
  }
  return s;
}

Var Seq2SeqModel::decode_step(const Tensor& token_ids, DecodeState& s) {
  if (token_ids.dim() != 1 || token_ids.dtype() != DType::i64)
    fail("Seq2SeqModel: decode_step takes one token id per sequence (B) i64, found " + shape_str(token_ids.shape()) + " " +
         dtype_name(token_ids.dtype()));
  if (s.blocks.size() != decoder->size() || token_ids.size(0) != s.batch)
    fail("Seq2SeqModel: the decode state does not come from start_decode for this model and a batch of " +
         std::to_string(token_ids.size(0)));
  const T5Attention* first = decoder->items()[0]->attention.get();
  Var bias = first ? first->position_bias_row(s.pos) : Var();  // (1, NH, 1, pos + 1), shared by every block
  Var h = shared->forward(token_ids);                          // (B, C)
  for (size_t i = 0; i < decoder->size(); i++) h = (*decoder)[i].step(h, s.blocks[i], bias, s.enc_mask);
  s.pos++;
  h = decoder_norm->forward(h);
  return matmul(h * std::pow((double)cfg.d_model, -0.5), transpose(shared->weight, 0, 1));  // (B, V)
}

// Greedy's bookkeeping, however the logits are computed: next(seq) gives (B, V) for the position after each row's
// last token (seq[b] starts with the start id 0). A finished row keeps being fed stop_id, so both twins see the same.
using NextLogits = std::function<Tensor(const std::vector<std::vector<int64_t>>&)>;
static Tensor greedy_loop(int64_t B, int64_t steps, int64_t stop_id, const NextLogits& next_logits) {
  std::vector<std::vector<int64_t>> seq(B, std::vector<int64_t>{0});
  std::vector<bool> done(B, false);
  int64_t n = 0;
  for (; n < steps; n++) {
    Tensor next = argmax(next_logits(seq), -1).to(Device::cpu);  // (B), read here
    bool all = true;
    for (int64_t b = 0; b < B; b++) {
      seq[b].push_back(done[b] ? stop_id : (int64_t)next.at({b}));
      if (seq[b].back() == stop_id) done[b] = true;
      all = all && done[b];
    }
    if (all) {
      n++;
      break;
    }
  }
  Tensor out = full({B, n}, (double)stop_id, DType::i64);
  for (int64_t b = 0; b < B; b++)
    for (int64_t s = 0; s < n; s++) out.data<int64_t>()[b * n + s] = seq[b][s + 1];
  return out;
}

Tensor Seq2SeqModel::greedy(const Tensor& ids, const Tensor& mask, int64_t steps, int64_t stop_id, const Tensor& segments) {
  NoGradGuard ng;
  const int64_t B = ids.size(0);
  DecodeState st = start_decode(encode(ids, mask, segments), mask);
  return greedy_loop(B, steps, stop_id, [&](const std::vector<std::vector<int64_t>>& seq) {
    Tensor last = Tensor::empty({B}, DType::i64);  // each row's newest token: the decoder's input at st.pos
    for (int64_t b = 0; b < B; b++) last.data<int64_t>()[b] = seq[b].back();
    return decode_step(last, st).data();  // (B, V)
  });
}

Tensor Seq2SeqModel::greedy_by_recompute(const Tensor& ids, const Tensor& mask, int64_t steps, int64_t stop_id,
                                         const Tensor& segments) {
  NoGradGuard ng;
  const int64_t B = ids.size(0);
  Var enc = encode(ids, mask, segments);
  return greedy_loop(B, steps, stop_id, [&](const std::vector<std::vector<int64_t>>& seq) {
    const int64_t T = (int64_t)seq[0].size();
    Tensor dec_in = zeros({B, T}, DType::i64);  // the whole prefix, every time
    for (int64_t b = 0; b < B; b++)
      for (int64_t t = 0; t < T; t++) dec_in.data<int64_t>()[b * T + t] = seq[b][t];
    return decode_logits(dec_in, enc, mask).data().select(1, T - 1);  // (B, V)
  });
}

// ---- ONNX export (docs/onnx.md) ----
// The graph values a block reads besides its input h: this stack's length L and padding mask ("" in the decoder,
// whose mixers see no mask, as forward), the self-attention's bias and allowed-mask, and the encoder's output and
// its allowed-mask for the cross-attention.
struct BlockValues {
  int64_t L = 0, S = 0;  // this stack's length, the encoder's
  std::string mask, bias, allowed, enc, enc_allowed;
};

// T5Attention::forward: q from x (B, Tq, C), k and v from kv (B, Tk, C), no 1/sqrt(HS), bias added, then masked.
static std::string t5_attention_onnx(onnx::Graph& g, const T5Attention& a, const std::string& x, const std::string& kv,
                                     int64_t Tq, int64_t Tk, const std::string& bias, const std::string& allowed,
                                     const std::string& p) {
  onnx::AttentionShape s;
  s.Tq = Tq, s.Tk = Tk, s.NH = a.cfg.num_heads, s.HS = a.cfg.d_kv, s.scale = false, s.bias = bias, s.allowed = allowed;
  std::string y = onnx::attention(g, onnx::linear(g, *a.q, x, p + "q."), onnx::linear(g, *a.k, kv, p + "k."),
                                  onnx::linear(g, *a.v, kv, p + "v."), s);  // (B, Tq, NH HS)
  return onnx::linear(g, *a.o, y, p + "o.");
}

// T5Attention::position_bias(T, S): the buckets of s - t are fixed for the export length, so they are a constant
// (T, S) int64, and the table a Gather from the initializer <p>relative_attention_bias.weight -> (1, NH, T, S).
static std::string position_bias_onnx(onnx::Graph& g, const T5Attention& a, int64_t T, int64_t S, const std::string& p) {
  Tensor buckets = zeros({T, S}, DType::i64);
  for (int64_t t = 0; t < T; t++)
    for (int64_t s = 0; s < S; s++)
      buckets.data<int64_t>()[t * S + s] = t5_relative_bucket(s - t, a.bidirectional, a.cfg.num_buckets, a.cfg.max_distance);
  std::string table = g.add_initializer(p + "relative_attention_bias.weight", a.relative_attention_bias->weight.data());
  std::string b = g.node("Gather", {table, g.constant(buckets, "relative_buckets")});  // (T, S, NH)
  return onnx::unsqueeze(g, onnx::transpose(g, b, {2, 0, 1}), {0});                    // (1, NH, T, S)
}

// pair_bias: 0 where query and key lie in different segments and the key is real, -1e9 elsewhere -> (B, 1, S, S).
static std::string pair_bias_onnx(onnx::Graph& g, const std::string& segments, const std::string& mask) {
  namespace ox = onnx;
  std::string same = g.node("Equal", {ox::unsqueeze(g, segments, {2}), ox::unsqueeze(g, segments, {1})});  // (B, S, S)
  std::string real_key = g.node("Cast", {ox::unsqueeze(g, mask, {1})}, {ox::attr_int("to", int64_t(ox::ElemType::boolean))});
  std::string ok = g.node("And", {g.node("Not", {same}), real_key});  // (B, S, S)
  return ox::unsqueeze(g, g.node("Where", {ok, g.constant(0.0f), g.constant(-1e9f)}), {1});
}

std::string Seq2SeqModel::Block::export_onnx(onnx::Graph& g, std::string h, const BlockValues& in, const std::string& p) const {
  namespace ox = onnx;
  const int64_t C = wi->weight.size(1);
  std::string n = ox::rms_norm(g, *norm_mix, h, p + "norm_mix.");
  if (attention) h = ox::add(g, h, t5_attention_onnx(g, *attention, n, n, in.L, in.L, in.bias, in.allowed, p + "attention."));
  else h = ox::add(g, h, mixer->export_onnx(g, {n, in.mask, in.L, C}, p + "mixer."));
  if (cross) {
    std::string nc = ox::rms_norm(g, *norm_cross, h, p + "norm_cross.");
    h = ox::add(g, h, t5_attention_onnx(g, *cross, nc, in.enc, in.L, in.S, "", in.enc_allowed, p + "cross."));
  }
  std::string ff = ox::linear(g, *wi, ox::rms_norm(g, *norm_ff, h, p + "norm_ff."), p + "wi.");
  return ox::add(g, h, ox::linear(g, *wo, g.node("Relu", {ff}), p + "wo."));
}

void Seq2SeqModel::export_onnx(onnx::Graph& g, int64_t S, int64_t T) {
  namespace ox = onnx;
  if (S < 1 || T < 1)
    fail("Seq2SeqModel export: the source and target lengths must be positive, found S " + std::to_string(S) + ", T " +
         std::to_string(T));
  const int64_t C = cfg.d_model, V = cfg.vocab_size;
  g.add_input("input_ids", ox::ElemType::i64, {ox::kBatch, S});
  g.add_input("attention_mask", ox::ElemType::f32, {ox::kBatch, S});
  if (pair_block) g.add_input("segments", ox::ElemType::i64, {ox::kBatch, S});
  g.add_input("decoder_input_ids", ox::ElemType::i64, {ox::kBatch, T});
  const std::string emb = g.add_initializer("shared.weight", shared->weight.data());  // (V, C)

  // encode(): blocks, [pair block], final norm -> (B, S, C)
  BlockValues e{S, S, "attention_mask", "", ox::key_mask_allowed(g, "attention_mask"), "", ""};
  const T5Attention* first = encoder->items()[0]->attention.get();
  if (first) e.bias = position_bias_onnx(g, *first, S, S, "encoder.0.attention.");
  std::string h = g.node("Gather", {emb, "input_ids"});  // (B, S, C)
  for (size_t i = 0; i < encoder->size(); i++) h = (*encoder)[i].export_onnx(g, h, e, "encoder." + std::to_string(i) + ".");
  if (pair_block) {
    BlockValues pv{S, S, "attention_mask", pair_bias_onnx(g, "segments", "attention_mask"), "", "", ""};
    h = pair_block->export_onnx(g, h, pv, "pair_block.");
  }
  const std::string enc = ox::rms_norm(g, *encoder_norm, h, "encoder_norm.");

  // decode_logits(): causal self-attention (or causal mixers, no mask), cross-attention to enc, tied head
  BlockValues d{T, S, "", "", "", enc, e.allowed};
  first = decoder->items()[0]->attention.get();
  if (first) {
    d.bias = position_bias_onnx(g, *first, T, T, "decoder.0.attention.");
    d.allowed = g.constant(attention_allowed(Tensor(), 1, T, T, true, 0, DType::f32, "Seq2SeqModel export"), "causal");
  }
  h = g.node("Gather", {emb, "decoder_input_ids"});  // (B, T, C)
  for (size_t i = 0; i < decoder->size(); i++) h = (*decoder)[i].export_onnx(g, h, d, "decoder." + std::to_string(i) + ".");
  h = ox::mul(g, ox::rms_norm(g, *decoder_norm, h, "decoder_norm."), g.constant(float(std::pow((double)C, -0.5))));
  g.add_node("MatMul", {h, ox::transpose(g, emb, {1, 0})}, {"logits"});  // (B, T, C) x (C, V)
  g.add_output("logits", ox::ElemType::f32, {ox::kBatch, T, V});
}

// ---- FLOP count (nn/sequence_layer.h's convention; the terms in seq2seq.h) ----
// T5's attention of T queries against S keys with `pairs` (query, key) pairs per batch item: q and o on the T
// positions, k and v on the S positions (C -> NH d_kv and back), and 4 d_kv FLOPs per pair and head. The relative
// position bias is a lookup and an addition, not counted.
static double t5_attention_flops(const T5Attention& a, double B, double T, double S, double pairs) {
  const double C = a.cfg.d_model, inner = (double)a.cfg.num_heads * a.cfg.d_kv;
  return matmul_flops(B * T, C, 2 * inner) + matmul_flops(B * S, C, 2 * inner) + B * pairs * 4 * inner;
}

// One block over L positions of its own stack (S: the source length, for the decoder's cross-attention). The pair
// block counts all L^2 pairs: which ones its mask allows depends on the segments, not on the shapes.
static double block_flops(const Seq2SeqModel::Block& b, double B, int64_t L, int64_t S) {
  const bool dec = b.kind == Seq2SeqModel::Block::decoder_block;
  double f =
      b.attention ? t5_attention_flops(*b.attention, B, L, L, attention_pairs(L, dec, 0)) : b.mixer->forward_flops((int64_t)B, L);
  if (b.cross) f += t5_attention_flops(*b.cross, B, L, S, (double)L * S);
  return f + matmul_flops(B * L, b.wi->in_features, b.wi->out_features) +
         matmul_flops(B * L, b.wo->in_features, b.wo->out_features);
}

double Seq2SeqModel::forward_flops(int64_t batch, int64_t S, int64_t T) const {
  double f = 0;
  for (size_t i = 0; i < encoder->size(); i++) f += block_flops((*encoder)[i], batch, S, S);
  if (pair_block) f += block_flops(*pair_block, batch, S, S);
  for (size_t i = 0; i < decoder->size(); i++) f += block_flops((*decoder)[i], batch, T, S);
  return f + matmul_flops((double)batch * T, cfg.d_model, cfg.vocab_size);  // the tied head
}

}  // namespace dl::nn
