// nn/models/sequence_backbone.h - the sequence backbone every classifier in the apps stacks (lra_benchmark's
// LraModel, classify's encoder, the CoSENT and mixers studies): one definition, so a registry layer placed in it
// behaves the same in every app. Shape letters: B batch, L length, D d_model, F features.
//
//   input     tokens (B, L) i64 -> Embedding(vocab, D)          when vocab > 0
//             features (B, L, F) f32 -> Linear(F, D)            otherwise
//   position  + P[:L], P (max_len, D) a learned parameter "pos" (normal, std 0.02), or a fixed sinusoidal table,
//             or nothing ("none": the mixers carry position themselves, as S4 and the convolutions do)
//             then dropout, where input_dropout is set
//   blocks    layers x nn::ResidualBlock(mixer, ffn): each block's mixer is make_mixer(D, g), built just before its
//             block so the Generator's draws go mixer, feed-forward, block after block
//   final     final_norm ("layer" or "batch", nn::make_sequence_norm)
//   pool      (B, L, D) -> (B, D): the masked mean over real positions, or the last real position
// A model derives from it and registers its heads after the backbone's modules (draw order and parameter names:
// embed | in_proj, pos, blocks.*, final_norm.*, then the heads). Streaming: a causal backbone also runs one position
// at a time (start_stream / step). What it is not: a decoder (nn/models/seq2seq.h).
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "nn/registry.h"
#include "nn/residual_block.h"

namespace dl::nn {

using MixerFactory = std::function<std::shared_ptr<SequenceLayer>(int64_t d_model, Generator& g)>;

// The usual mixer: the registry layer of that name with the backbone's shared options (nn::backbone_config) and,
// merged over them, the user's own options for it.
MixerFactory registry_mixer(const std::string& layer, const BackboneOptions& shared,
                            const LayerConfig& own = LayerConfig::object());

struct SequenceBackboneOptions {
  int64_t vocab = 0;     // token ids in [0, vocab); 0: continuous features
  int64_t features = 0;  // per-position features when vocab = 0
  int64_t d_model = 64;
  int64_t max_len = 0;  // the positions' table length (and the longest sequence encode takes with positions)
  int layers = 2;
  std::string positions = "none";  // "none", "learned" or "sinusoidal"
  bool input_dropout = false;      // dropout (block.dropout) on the embedded input
  std::string final_norm = "layer";
  ResidualBlockOptions block;  // norm, prenorm, dropout, ffn_hidden of every block
};

class SequenceBackbone : public Module {
 public:
  SequenceBackbone(const SequenceBackboneOptions& o, const MixerFactory& make_mixer, Generator& g);
  std::string type_name() const override { return "SequenceBackbone"; }

  // (B, L) i64 tokens or (B, L, F) f32 features, mask (B, L) f32 (1 = real position; undefined: all real)
  // -> (B, L, D) after the final norm. The input and mask may be on the host while the model is on a device.
  Var encode(const Tensor& input, const Tensor& mask);
  // (B, L, D) -> (B, D): how = "mean" (masked mean) or "last" (the last real position of each row).
  static Var pool(const Var& h, const Tensor& mask, const std::string& how = "mean");

  // Streaming (nn/sequence_layer.h) when every block is causal: one position at a time, (B) i64 token ids or (B, F)
  // features -> (B, D) after the final norm, equal to encode's output at that position. A block that looks ahead
  // makes start_stream refuse, naming it.
  StreamState start_stream(int64_t batch) const;
  Var step(const Tensor& input, StreamState& s);

  // ONNX export (nn/onnx/, docs/onnx.md) for sequences of length L: input names the graph value of the tokens (batch, L)
  // int64 or the features (batch, L, F) float, mask the padding mask (batch, L) float or "" -> the value (batch, L, D)
  // that encode returns. Every block's mixer must export; one that does not throws, naming it.
  std::string export_encode(onnx::Graph& g, const std::string& input, const std::string& mask, int64_t L,
                            const std::string& prefix = "");
  // pool in ONNX: (batch, L, D) -> (batch, D), "mean" or "last" as pool() computes them.
  static std::string export_pool(onnx::Graph& g, const std::string& h, const std::string& mask, int64_t L,
                                 const std::string& how = "mean");

  // FLOPs of encode on (B, L) positions (nn/sequence_layer.h's convention): the features' input projection (2 B L F D)
  // and every block's own count; the embedding lookup, positions, norms and pooling are free.
  double forward_flops(int64_t batch, int64_t L) const;

  ResidualBlock& block(size_t i) { return (*blocks_)[i]; }
  size_t num_blocks() const { return blocks_->size(); }
  Device device() const;  // where the parameters are
  const SequenceBackboneOptions& options() const { return opt_; }

 private:
  SequenceBackboneOptions opt_;
  std::shared_ptr<Embedding> embed_;
  std::shared_ptr<Linear> in_proj_;
  Var pos_;          // learned positions (max_len, D), or undefined
  Tensor sinusoid_;  // the fixed table (max_len, D), or undefined
  std::shared_ptr<ModuleList<ResidualBlock>> blocks_;
  std::shared_ptr<Module> final_norm_;
  std::shared_ptr<Dropout> drop_;  // only with input_dropout
};

}  // namespace dl::nn
