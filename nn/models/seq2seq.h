// nn/models/seq2seq.h - the encoder-decoder shell of "Are Pre-trained Convolutions Better than Pre-trained
// Transformers?" (Tay et al. 2021): T5's stacks (pre-norm RMSNorm residual sub-layers, ReLU feed-forward, tied
// embeddings) with the token mixer chosen by name, so a Transformer and its convolutional twins differ only there.
//
// Shape letters: B batch, S source time, T target time, C = d_model, NH heads, V vocab.
//   encoder block   h = h + Mixer(norm(h));                         h = h + wo(relu(wi(norm(h))))
//   decoder block   h = h + CausalMixer(norm(h)); h = h + CrossAttention(norm(h), enc); h = h + FF(norm(h))
//   logits          = (final_norm(h) * C^-0.5) shared^T                (T5 v1.0's tied head)
// Mixers:
//   transformer     T5 self-attention with its relative position bias (nn/models/t5.h: one bucket table per stack,
//                   in block 0, shared by the others; no 1/sqrt(d) in the scores, T5's initialisation instead)
//   any registry layer (nn/registry.h), e.g. lightconv, dynamicconv, dilatedconv (nn/conv/conv_seq.h: GLU
//                   projection -> softmax-normalised depthwise convolution -> output projection), built with
//                   kernel_size = kernel_sizes[i], dilation = dilations[i] (the last value repeats), num_heads,
//                   causal in the decoder. The decoder keeps its cross-attention, as the released configs do
//                   (google-research pretrained_conv/gin/lconv.gin).
//   pair_attention  one more encoder block on top whose mixer is attention between the two segments of a pair
//                   input "A <sep> B": a position of A attends only to positions of B and the reverse (the paper's
//                   "conv + one cross-attention layer" for tasks that relate two sequences).
// Initialisation: embeddings N(0, 1); q N(0, (C d_kv)^-1/2), k and v N(0, C^-1/2), o N(0, (NH d_kv)^-1/2);
// wi N(0, C^-1/2), wo N(0, d_ff^-1/2) (HF T5PreTrainedModel._init_weights, factor 1); convolution blocks keep
// their own (conv_seq.h). Teacher forcing and the loss as T5Model: decoder input = labels shifted right with start
// id 0, label -100 ignored. What it is not: dropout (the released configs train without it).
//
// Decoding as a recurrence (start_decode / decode_step): the decoder runs one target position at a time, each block
// keeping what later positions need, so token t costs O(t) attention work (transformer) or O(K) (a convolution's
// window) instead of decode_logits' whole prefix again (O(t^2) and O(t K) per token):
//   cross-attention   its keys and values of the encoder output, (B, NH, S, HS), computed once in start_decode
//   transformer       a key/value cache (B, NH, t, HS) and the relative position bias of query t against keys 0..t
//   registry mixer    the layer's own stream (SequenceLayer::start_stream / step: a convolution's last K inputs, an
//                     SSM's state, an LSTM's h and c); a mixer that cannot stream refuses in start_decode, naming it
// greedy runs on it; greedy_by_recompute is its plain twin (decode_logits over the whole prefix for every token),
// kept so a test can check that the two pick the same tokens.
#pragma once
#include <string>
#include <vector>

#include "nn/models/t5.h"
#include "nn/sequence_layer.h"

namespace dl::nn {

struct Seq2SeqConfig {
  int64_t vocab_size = 300, d_model = 128, d_ff = 512, num_layers = 2, num_decoder_layers = 2, num_heads = 4;
  std::string mixer = "transformer";
  std::vector<int64_t> kernel_sizes = {7};  // per layer of a convolution mixer (the last repeats)
  std::vector<int64_t> dilations = {1};     // per layer (dilatedconv)
  bool pair_attention = false;
  int64_t num_buckets = 32, max_distance = 128;
  double eps = 1e-6;
  T5Config t5() const;  // the attention's settings (d_kv = d_model / num_heads)
};

// What the decoder carries from one target position to the next (see "Decoding as a recurrence" above).
struct DecodeState {
  struct Block {
    Tensor cross_k, cross_v;  // (B, NH, S, HS): the cross-attention's keys and values of the encoder output
    Tensor self_k, self_v;    // transformer: (B, NH, t, HS), the self-attention's cache (undefined before position 0)
    StreamState mixer;        // a registry mixer's own stream state
  };
  std::vector<Block> blocks;   // one per decoder block
  Tensor enc_mask;             // (B, S) f32, the encoder's padding (1 = real), or undefined
  int64_t batch = 0, pos = 0;  // B, and the target positions consumed so far
};

class Seq2SeqModel : public Module {
 public:
  Seq2SeqModel(const Seq2SeqConfig& c, Generator& g);
  std::string type_name() const override { return "Seq2Seq(" + cfg.mixer + ")"; }
  // ids (B, S) i64, mask (B, S) f32 (1 = real); segments (B, S) i64 of 0 / 1, needed with pair_attention.
  Var encode(const Tensor& ids, const Tensor& mask, const Tensor& segments = Tensor());
  Var decode_logits(const Tensor& dec_in, const Var& enc, const Tensor& enc_mask);  // (B, T, V)
  struct Output {
    Var logits, loss;
  };
  Output forward(const Tensor& ids, const Tensor& mask, const Tensor& labels, const Tensor& segments = Tensor());
  // Decoding one target position at a time (eval mode, no grad): enc = encode(...) (B, S, C) and its mask (B, S);
  // then token_ids (B) i64, the decoder's input at position pos (0 = the start id) -> logits (B, V), equal to
  // decode_logits(dec_in, enc, enc_mask)[:, pos] for the dec_in whose positions 0..pos were fed.
  DecodeState start_decode(const Var& enc, const Tensor& enc_mask);
  Var decode_step(const Tensor& token_ids, DecodeState& s);
  // Greedy decoding for up to `steps` tokens (no grad); a row stops at stop_id (kept) and is padded with it.
  // On the decoder's stream (decode_step); greedy_by_recompute gives the same tokens by decode_logits over the prefix.
  Tensor greedy(const Tensor& ids, const Tensor& mask, int64_t steps, int64_t stop_id, const Tensor& segments = Tensor());
  Tensor greedy_by_recompute(const Tensor& ids, const Tensor& mask, int64_t steps, int64_t stop_id,
                             const Tensor& segments = Tensor());
  // ONNX export (nn/onnx/, docs/onnx.md) of teacher forcing at source length S and target length T, eval mode:
  // graph inputs input_ids (batch, S) int64, attention_mask (batch, S) float (1 = real), [segments (batch, S) int64
  // with pair_attention], decoder_input_ids (batch, T) int64 (shift_right of the labels) -> output logits
  // (batch, T, V), as decode_logits(dec_in, encode(ids, mask, segments), mask). Weights under the state_dict's names;
  // a mixer without an export refuses, naming itself. Greedy decoding loops outside the graph (one run per token).
  void export_onnx(onnx::Graph& g, int64_t S, int64_t T);
  // FLOPs of one teacher-forced forward (nn/sequence_layer.h's convention) for `batch` pairs of S source and T target
  // positions: each block's mixer (its own forward_flops; T5's attention counted here, its bias not), the
  // cross-attention (4 T C^2 + 4 S C^2 + 4 T S C), the feed-forwards (4 C d_ff per position) and the tied head
  // (2 T C V). The embedding lookup and the norms are not counted. A training step is train_step_flops of it.
  double forward_flops(int64_t batch, int64_t S, int64_t T) const;

  Seq2SeqConfig cfg;
  struct Block;
  std::shared_ptr<Embedding> shared;
  std::shared_ptr<ModuleList<Block>> encoder, decoder;
  std::shared_ptr<Block> pair_block;  // null unless pair_attention
  std::shared_ptr<RMSNorm> encoder_norm, decoder_norm;
};

// The decoder input of teacher forcing: labels (B, T) shifted right, start id 0, -100 -> 0.
Tensor shift_right(const Tensor& labels);

}  // namespace dl::nn
