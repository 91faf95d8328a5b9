// nn/conv/conv_seq.h - convolutional sequence layers: lightweight and dynamic convolution (Wu, Fan, Baevski, Dauphin,
// Auli 2019, "Pay Less Attention with Lightweight and Dynamic Convolutions") and dilated depthwise-separable
// convolution, each inside the GLU-projection block of Tay et al. 2021 ("Are Pretrained Convolutions Better
// than Pretrained Transformers?"). Shape letters: B batch, L length, C channels (= d_model), H heads, K taps.
//
// The block (GLUConvBlock::forward):  x (B, L, C) -> input_linear (C -> 2C) -> GLU -> conv -> output_linear (C -> C)
// Padding masks zero the padded positions right before the convolution (after the GLU, whose bias would make
// them non-zero), so padding never leaks into real positions.
//
// The convolutions (y[b, t, c]; pl = left padding: K-1 when causal, (K-1)/2 otherwise; x outside [0, L) is 0):
//   lightweight  y = sum_k softmax_k(W[h(c), :])[k] x[b, t + k - pl, c]        W (H, 1, K), shared by the C/H
//                channels of a head, h(c) = c / (C/H) (contiguous groups); weight dropout (DropConnect) on the
//                normalised kernel in training. Runs as a depthwise conv1d (autograd/conv.h).
//   dynamic      the same with a kernel predicted at every position from the input:
//                W[b, t] = softmax_k(weight_linear(x[b, t]) viewed (H, K)); composed from K shifted products.
//   dilated      depthwise conv (C, 1, K) with dilation d (+ bias), then pointwise Linear (C -> C):
//                y = pointwise(sum_k w[c, k] x[b, t + k d - pl, c] + b[c]), pl = (K-1) d (causal) or (K-1) d / 2.
// Kernel sizes are configurable per layer (Tay et al. use 3, 7, 15, 31, ...); K must be odd unless causal.
// Parameter names as fairseq (weight, weight_linear) and torch (input_linear, output_linear, depthwise, pointwise).
// What it is not: fairseq's CUDA kernels or its TBC layout; head assignment h(c) = c / (C/H) is our choice
// (fairseq's BCT module interleaves heads, c % H).
#pragma once
#include "nn/layers.h"
#include "nn/sequence_layer.h"

namespace dl::nn {

struct ConvSeqOptions {
  int64_t kernel_size = 7;
  int64_t num_heads = 1;  // lightweight / dynamic
  int64_t dilation = 1;   // dilated
  bool causal = false;
  double weight_dropout = 0.0;
  double dropout = 0.0;  // on the block output
};

// A convolution over (B, L, C) -> (B, L, C).
struct SeqConv : Module {
  virtual Var forward(const Var& x) = 0;
  // ONNX export (eval mode): x (B, L, C) -> (B, L, C), weights under prefix + their state_dict names.
  virtual std::string export_onnx(onnx::Graph& g, const std::string& x, int64_t L, const std::string& prefix) = 0;
};

class LightweightConv : public SeqConv {
 public:
  LightweightConv(int64_t C, const ConvSeqOptions& opt, Generator& g);
  std::string type_name() const override { return "LightweightConv"; }
  Var forward(const Var& x) override;
  std::string export_onnx(onnx::Graph& g, const std::string& x, int64_t L, const std::string& prefix) override;
  // nn/inspect.h: softmax(weight) (H, K), one row per head
  ConvTaps conv_taps() const override;
  Var weight;  // (H, 1, K)
  int64_t C;
  ConvSeqOptions opt;
  Generator* gen;
};

class DynamicConv : public SeqConv {
 public:
  DynamicConv(int64_t C, const ConvSeqOptions& opt, Generator& g);
  std::string type_name() const override { return "DynamicConv"; }
  Var forward(const Var& x) override;
  std::string export_onnx(onnx::Graph& g, const std::string& x, int64_t L, const std::string& prefix) override;
  // nn/inspect.h: predicted taps, recorded per position (record_kernels below) as (B, L, H, K)
  ConvTaps conv_taps() const override;
  bool record_conv_taps(std::vector<Var>* slot) override { return record_kernels = slot, true; }
  std::shared_ptr<Linear> weight_linear;  // C -> H K
  int64_t C;
  ConvSeqOptions opt;
  Generator* gen;
  // When set, forward() appends the normalised kernels it predicted, (B, L, H, K) before weight dropout, here (as
  // MultiheadAttention::record_weights does for attention), so an inspection tool (apps/explain) can show them.
  std::vector<Var>* record_kernels = nullptr;
};

class DilatedSeparableConv : public SeqConv {
 public:
  DilatedSeparableConv(int64_t C, const ConvSeqOptions& opt, Generator& g);
  std::string type_name() const override { return "DilatedSeparableConv"; }
  Var forward(const Var& x) override;
  std::string export_onnx(onnx::Graph& g, const std::string& x, int64_t L, const std::string& prefix) override;
  // nn/inspect.h: the raw depthwise taps (C, K), one row per channel
  ConvTaps conv_taps() const override;
  Var depthwise_weight, depthwise_bias;  // "depthwise.weight" (C, 1, K), "depthwise.bias" (C)
  std::shared_ptr<Linear> pointwise;
  int64_t C;
  ConvSeqOptions opt;
};

class GLUConvBlock : public SequenceLayer {
 public:
  // kind: "lightconv", "dynamicconv" or "dilatedconv"
  GLUConvBlock(const std::string& kind, int64_t d_model, const ConvSeqOptions& opt, Generator& g);
  static std::shared_ptr<GLUConvBlock> from_config(const std::string& kind, int64_t d_model, const LayerConfig& cfg,
                                                   Generator& g);
  static std::vector<std::string> config_keys(const std::string& kind);
  std::string type_name() const override { return "GLUConvBlock(" + kind + ")"; }
  Var forward(const Var& x, const Tensor& mask) override;
  bool is_causal() const override { return opt.causal; }
  // Streaming, causal: the state is the last R = (K - 1) dilation + 1 GLU outputs (B, R, C), zeros at first (the
  // forward's left padding); a step shifts the newest in and runs the convolution over that window, keeping its last
  // position. O(R C) per step, whatever the position.
  StreamState start_stream(int64_t batch) const override;
  Var step(const Var& x, StreamState& s) override;  // (B, C) -> (B, C)
  bool streams_in_constant_memory() const override { return opt.causal; }
  // ONNX export: the block's linears and GLU, the mask, then the convolution's own export (lightweight and dilated as a
  // depthwise Conv, dynamic as K shifted products with its predicted kernels).
  std::string export_onnx(onnx::Graph& g, const onnx::Sequence& in, const std::string& prefix) override;
  double forward_flops(int64_t batch, int64_t L) const override;  // nn/sequence_layer.h's convention

  std::string kind;
  std::shared_ptr<Linear> input_linear, output_linear;
  std::shared_ptr<SeqConv> conv;
  std::shared_ptr<Dropout> drop;
  ConvSeqOptions opt;
  int64_t C;
};

}  // namespace dl::nn
