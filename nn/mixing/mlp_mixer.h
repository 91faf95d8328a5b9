// nn/mixing/mlp_mixer.h - the MLP-Mixer block (Tolstikhin et al. 2021, "MLP-Mixer: An all-MLP Architecture for
// Vision"; timm's names) as a sequence layer: token mixing by an MLP over the position axis, then channel mixing.
// Shape letters: B batch, T length, L = seq_len (the fixed length the token MLP is sized for), C channels.
//
//   x = x + mlp_tokens(norm1(x)^T)^T     (mixes along L: fc1 (token_hidden, L), fc2 (L, token_hidden))
//   x = x + mlp_channels(norm2(x))       (mixes along C)
// Shorter inputs are zero-padded to seq_len; padded positions are zeroed before token mixing, so they cannot leak
// into real positions. The block carries its own channel MLP and residuals (wants_feed_forward() is false).
// What it is not: causal (every position mixes with every other), or usable beyond seq_len.
#pragma once
#include "nn/layers.h"
#include "nn/sequence_layer.h"

namespace dl::nn {

class MixerBlock : public SequenceLayer {
 public:
  MixerBlock(int64_t seq_len, int64_t d_model, int64_t token_hidden, int64_t channel_hidden, Generator& g);
  // registry "mixer": max_len (required), token_hidden [max_len / 2], channel_hidden [4 d_model]
  static std::shared_ptr<MixerBlock> from_config(int64_t d_model, const LayerConfig& c, Generator& g);
  static std::vector<std::string> config_keys() { return {"max_len", "token_hidden", "channel_hidden"}; }
  std::string type_name() const override { return "MixerBlock"; }
  Var forward(const Var& x, const Tensor& mask) override;     // (B, T, C) with T <= seq_len
  bool wants_feed_forward() const override { return false; }  // mlp_channels is its feed-forward
  // ONNX export for the export length L = seq_len (another length refuses, naming both).
  std::string export_onnx(onnx::Graph& g, const onnx::Sequence& in, const std::string& prefix) override;
  double forward_flops(int64_t batch, int64_t L) const override;  // nn/sequence_layer.h's convention

  std::shared_ptr<LayerNorm> norm1, norm2;
  std::shared_ptr<Mlp> mlp_tokens, mlp_channels;
  int64_t seq_len;
};

}  // namespace dl::nn
