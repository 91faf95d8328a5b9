// nn/models/t5.h - a T5-style encoder-decoder (Raffel et al. 2020) with Hugging Face T5ForConditionalGeneration's
// state_dict names (v1.0 layout: ReLU feed-forward, lm_head tied to `shared` with the d_model^-0.5 rescale).
//
// Shape letters: B batch, S source time, T target time, C = d_model, NH heads, HS = d_kv, V vocab.
//   attention   scores = q k^T + position_bias (NO 1/sqrt(HS): T5 folds it into the initialisation)
//   position_bias[h, t, s] = relative_attention_bias[bucket(s - t), h]   (only block 0 of each stack owns the
//               table; the other blocks reuse its bias; cross-attention has none)
//   bucket(r)   bidirectional (encoder): half the buckets for r > 0; then |r| < nb/2 exact, larger |r| in
//               log-spaced buckets up to max_distance (the last bucket holds everything beyond);
//               unidirectional (decoder): only r <= 0 is distinguished (as HF _relative_position_bucket)
//   block       h = h + SelfAttention(layer_norm(h)); [decoder: h = h + EncDecAttention(layer_norm(h), enc)];
//               h = h + wo(relu(wi(layer_norm(h))))                      layer_norm = RMSNorm without bias
//   logits      = (final_layer_norm(h) * C^-0.5) shared^T
// Names: shared.weight, {encoder,decoder}.block.<i>.layer.<j>.{SelfAttention,EncDecAttention}.{q,k,v,o}.weight,
// ...layer.0.SelfAttention.relative_attention_bias.weight (block 0), ...layer.<j>.DenseReluDense.{wi,wo}.weight,
// ...layer.<j>.layer_norm.weight, {encoder,decoder}.final_layer_norm.weight.
// Teacher forcing: decoder input = labels shifted right with start token 0 (-100 -> 0); loss = mean cross
// entropy over labels != -100. What it is not: dropout.
//
// Decoding as a recurrence (start_decode / decode_step, as Seq2SeqModel's): the decoder runs one target position at
// a time, so token t costs O(t) attention work instead of decode_logits' whole prefix again (O(t^2)):
//   EncDecAttention   its keys and values of the encoder output, (B, NH, S, HS), computed once in start_decode
//   SelfAttention     a key/value cache (B, NH, t, HS) per block, and query t's row of the relative position bias
//                     (T5Attention::step, position_bias_row), shared by every block as in the full forward
// greedy runs on it; greedy_by_recompute is its plain twin (decode_logits over the whole prefix for every token),
// kept as the reference a test checks greedy's tokens against.
#pragma once
#include "nn/attention/attention.h"

namespace dl::nn {

struct T5Config {
  int64_t vocab_size = 32128, d_model = 512, d_kv = 64, d_ff = 2048, num_layers = 6, num_heads = 8;
  int64_t num_buckets = 32, max_distance = 128;
  double eps = 1e-6;
};

int64_t t5_relative_bucket(int64_t relative_position, bool bidirectional, int64_t num_buckets, int64_t max_distance);

class T5Attention : public Module {
 public:
  T5Attention(const T5Config& c, bool has_relative_bias, bool bidirectional, Generator& g);
  std::string type_name() const override { return "T5Attention"; }
  Var position_bias(int64_t T, int64_t S) const;  // (1, NH, T, S); needs has_relative_bias
  // x (B, T, C) attends to kv (B, S, C); bias broadcast to (B, NH, T, S) or undefined; key_mask (B, S).
  Var forward(const Var& x, const Var& kv, const Var& bias, const Tensor& key_mask, bool causal) const;
  std::shared_ptr<Linear> q, k, v, o;
  std::shared_ptr<Embedding> relative_attention_bias;  // null unless has_relative_bias
  T5Config cfg;
  bool bidirectional;
  std::vector<Var>* record_weights = nullptr;  // when set, forward appends its weights (B, NH, T, S) (apps/explain)
  bool record_attention(std::vector<Var>* slot) override { return record_weights = slot, true; }  // nn/module.h

  // Decoding one position at a time (Seq2SeqModel::decode_step; eval mode, no grad). The same scores as forward's
  // row t: q_t K^T + bias, no 1/sqrt(HS), softmax over the allowed keys, times V.
  // position_bias_row(t): query t against keys 0..t, (1, NH, 1, t + 1) = position_bias(t + 1, t + 1)'s last row.
  Var position_bias_row(int64_t t) const;
  // The keys and values of kv (B, S, C), each (B, NH, S, HS): cross-attention's, computed once per source.
  std::pair<Tensor, Tensor> keys_values(const Var& kv) const;
  // x (B, C) attends to the cache K, V (B, NH, S, HS) with key_mask (B, S) or undefined, bias or undefined -> (B, C).
  Var attend_cached(const Var& x, const Tensor& K, const Tensor& V, const Var& bias, const Tensor& key_mask) const;
  // Causal self-attention's step: x's own key and value join the cache K, V (undefined before the first position),
  // then x attends to every cached position with bias = position_bias_row(t) -> (B, C).
  Var step(const Var& x, Tensor& K, Tensor& V, const Var& bias) const;
};

// What T5Model's decoder carries from one target position to the next (see "Decoding as a recurrence" above).
struct T5DecodeState {
  struct Block {
    Tensor cross_k, cross_v;  // (B, NH, S, HS): EncDecAttention's keys and values of the encoder output
    Tensor self_k, self_v;    // (B, NH, t, HS): SelfAttention's cache (undefined before position 0)
  };
  std::vector<Block> blocks;   // one per decoder block
  Tensor enc_mask;             // (B, S) f32, the encoder's padding (1 = real), or undefined
  int64_t batch = 0, pos = 0;  // B, and the target positions consumed so far
};

class T5Model : public Module {
 public:
  T5Model(const T5Config& c, Generator& g);
  std::string type_name() const override { return "T5Model"; }
  Var encode(const Tensor& ids, const Tensor& mask);                                // (B, S, C)
  Var decode_logits(const Tensor& dec_in, const Var& enc, const Tensor& enc_mask);  // (B, T, V)
  struct Output {
    Var logits, loss;
  };
  Output forward(const Tensor& ids, const Tensor& mask, const Tensor& labels);  // teacher forcing
  // Decoding one target position at a time (eval, no grad): enc = encode(ids, mask) (B, S, C) and its mask (B, S);
  // then token_ids (B) i64, the decoder's input at position pos (0 = the start id) -> logits (B, V), equal to
  // decode_logits(dec_in, enc, enc_mask)[:, pos] for the dec_in whose positions 0..pos were fed.
  T5DecodeState start_decode(const Var& enc, const Tensor& enc_mask);
  Var decode_step(const Tensor& token_ids, T5DecodeState& s);
  // Greedy decoding of `steps` tokens from start id 0: (B, steps) i64, no grad. On the decoder's stream
  // (decode_step); greedy_by_recompute gives the same tokens by decode_logits over the whole prefix every step.
  Tensor greedy(const Tensor& ids, const Tensor& mask, int64_t steps);
  Tensor greedy_by_recompute(const Tensor& ids, const Tensor& mask, int64_t steps);
  T5Config cfg;

  struct Stack;
  std::shared_ptr<Embedding> shared;
  std::shared_ptr<Stack> encoder, decoder;
};

}  // namespace dl::nn
