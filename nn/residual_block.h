// nn/residual_block.h - the residual block every backbone stacks around a sequence layer (the "mixer"), as the
// S4 repo's SequenceResidualBlock and a Transformer encoder layer both are. Shape letters: B batch, L length, H channels.
//
//   pre-norm  (prenorm = true):   x = x + drop(mixer(norm1(x), mask));   x = x + drop(ffn(norm2(x)))
//   post-norm (prenorm = false):  x = norm1(x + drop(mixer(x, mask)));   x = norm2(x + drop(ffn(x)))
//   ffn(x) = fc2(dropout(gelu(fc1(x))))  (nn/layers.h FeedForward, H -> ffn_hidden -> H)
// The feed-forward sub-block is there when ffn_hidden > 0 and the mixer wants one (SequenceLayer::
// wants_feed_forward: the S4 family ends in its own GLU projection and says no). norm = "layer" (LayerNorm over
// H) or "batch" (BatchNorm1d over each channel of (B, L)).
// Parameter names: mixer.*, norm1.*, norm2.*, ffn.{fc1,fc2}.*; module drop.
// What it is not: a cross-attention (decoder) block; nn/models/transformer.h has those.
#pragma once
#include "nn/layers.h"
#include "nn/sequence_layer.h"

namespace dl::nn {

// A norm over the channels of (B, L, H): "layer" -> LayerNorm(H), "batch" -> BatchNorm1d(H); anything else throws.
std::shared_ptr<Module> make_sequence_norm(const std::string& kind, int64_t d_model);
// Applies a norm made by make_sequence_norm to x (B, L, H) (BatchNorm1d sees (B, H, L)).
Var apply_sequence_norm(Module& norm, const Var& x);
// The same on one position x (B, H), as a stream's step sees it (a layer norm acts per position).
Var apply_sequence_norm_step(Module& norm, const Var& x);

struct ResidualBlockOptions {
  std::string norm = "layer";  // "layer" or "batch"
  bool prenorm = true;
  double dropout = 0.0;    // on the mixer's and the feed-forward's outputs (and inside the feed-forward)
  int64_t ffn_hidden = 0;  // 0: no feed-forward sub-block
};

class ResidualBlock : public SequenceLayer {
 public:
  // Build the mixer just before the block: the Generator's draws then follow the order mixer, ffn, as ever.
  ResidualBlock(std::shared_ptr<SequenceLayer> mixer, int64_t d_model, const ResidualBlockOptions& opt, Generator& g);
  std::string type_name() const override { return "ResidualBlock"; }
  std::string extra_repr() const override;
  Var forward(const Var& x, const Tensor& mask) override;  // (B, L, H) -> (B, L, H)
  // Batch norm mixes positions (its statistics span the sequence), so only a layer-norm block can be causal.
  bool is_causal() const override { return mixer_->is_causal() && opt.norm == "layer"; }
  bool wants_feed_forward() const override { return false; }
  // Streaming: the mixer's stream (its state is the one child of the block's), the norms and feed-forward per position.
  StreamState start_stream(int64_t batch) const override;
  Var step(const Var& x, StreamState& s) override;  // (B, H) -> (B, H)
  bool streams_in_constant_memory() const override { return mixer_->streams_in_constant_memory(); }
  // ONNX export: the mixer's own export between the norms and residual sums; the feed-forward as Linear-GELU-Linear.
  std::string export_onnx(onnx::Graph& g, const onnx::Sequence& in, const std::string& prefix) override;
  // The mixer's count plus the feed-forward's two products (4 L H ffn_hidden); the norms are elementwise, not counted.
  double forward_flops(int64_t batch, int64_t L) const override;  // nn/sequence_layer.h's convention
  SequenceLayer& mixer() { return *mixer_; }
  const SequenceLayer& mixer() const { return *mixer_; }
  bool has_feed_forward() const { return ffn_ != nullptr; }

  ResidualBlockOptions opt;

 private:
  std::shared_ptr<SequenceLayer> mixer_;
  std::shared_ptr<Module> norm1_, norm2_;
  std::shared_ptr<FeedForward> ffn_;
  std::shared_ptr<Dropout> drop_;
};

}  // namespace dl::nn
