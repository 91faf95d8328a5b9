// nn/recurrent/lstm.h - the LSTM (Hochreiter & Schmidhuber 1997) as torch.nn.LSTM(batch_first=True), multi-layer, plus a
// layer-norm variant (LN on the gate pre-activations and on the cell, Ba et al. 2016; the FPT paper's LSTM
// baseline). Shape letters: B batch, L length, I input size, Hd hidden size (= d_model in the registry).
//
// One step (gate order i, f, g, o as PyTorch; W_ih (4Hd, I), W_hh (4Hd, Hd)):
//   gates = x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh                          (B, 4Hd)
//   i = sigmoid(gates_i), f = sigmoid(gates_f), g = tanh(gates_g), o = sigmoid(gates_o)
//   c_t = f c_{t-1} + i g,   h_t = o tanh(c_t)
// The input projection of all L steps is one matmul (B*L rows) before the time loop; the loop only does the
// (B, Hd) @ (Hd, 4Hd) recurrent product and the cell.
// Fast path, lstm_sequence (nn/fused/lstm_kernels.h): the whole layer as one node (f32 CPU, no layer norm).
// Time-major buffers; the input projection of all steps is one sgemm, each step is the recurrent sgemm plus a
// vectorised cell (sigmoid/tanh from exp_fast, absolute error < 5e-7); the threads split the hidden units once for
// the whole loop and meet at one barrier per step (no fork per step). Backward runs the recurrence the same way,
// then forms dW_hh = dG^T H_prev, dW_ih = dG^T X, dx = dG W_ih as one sgemm each over all L B rows.
// The per-step graph is its reference twin (LSTMOptions::sequence = false); tests/nn/fused/test_lstm_fast.cpp
// checks the two agree. Per-step path: two cells compute the pointwise part: lstm_cell_fused (one Node, forward
// and backward written out in nn/fused/lstm_kernels.cpp) and lstm_cell_composed (sigmoid/tanh/mul/add
// primitives); tests/nn/recurrent/test_lstm.cpp checks values and gradients agree.
// lstm_cell_fused backward (dh, dc_out = upstream of h_t and c_t; tc = tanh(c_t)):
//     dc = dc_out + dh o (1 - tc^2);  do = dh tc;  di = dc g;  dg = dc i;  df = dc c_{t-1};  dc_{t-1} = dc f
//     d gates = (di i(1-i), df f(1-f), dg (1-g^2), do o(1-o))
// Layer-norm variant: gates = LN_ih(x W_ih^T) + LN_hh(h W_hh^T) + b_ih + b_hh, h_t = o tanh(LN_c(c_t)), composed.
// Parameter names as torch.nn.LSTM: weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k}; the LN variant
// adds ln_ih_l{k}, ln_hh_l{k}, ln_c_l{k} (LayerNorm weight/bias). Init U(-1/sqrt(Hd), 1/sqrt(Hd)) as PyTorch.
// Streaming (nn/sequence_layer.h): start_stream / step carry h and c of every layer from one position to the next.
// What it is not: bidirectional or projected (proj_size) LSTMs; forward has no initial states (zeros) and no c_n output.
#pragma once
#include "nn/layers.h"
#include "nn/fused/lstm_kernels.h"
#include "nn/sequence_layer.h"

namespace dl::nn {

// gates (B, 4Hd), c (B, Hd) -> (B, 2, Hd) holding [h_t, c_t]: the composed twin of nn/fused/lstm_kernels.h's
// lstm_cell_fused.
Var lstm_cell_composed(const Var& gates, const Var& c);

struct LSTMOptions {
  int64_t num_layers = 1;
  bool layer_norm = false;
  bool sequence = true;  // lstm_sequence where it applies (f32 CPU, no layer norm); false: the per-step graph
  bool fused = true;     // per-step graph: lstm_cell_fused, else composed (the layer-norm variant is always composed)
  double dropout = 0.0;  // between layers, as torch.nn.LSTM
};

class LSTM : public SequenceLayer {
 public:
  LSTM(int64_t input_size, int64_t hidden_size, const LSTMOptions& opt, Generator& g);
  static std::shared_ptr<LSTM> from_config(int64_t d_model, const LayerConfig& cfg, Generator& g);
  static std::vector<std::string> config_keys() { return {"num_layers", "layer_norm", "fused", "sequence", "dropout"}; }
  std::string type_name() const override { return opt.layer_norm ? "LayerNormLSTM" : "LSTM"; }
  std::string extra_repr() const override;
  // x (B, L, I) -> output (B, L, Hd) of the last layer; zero initial states. mask: padding rows are zeroed on
  // input; the LSTM is causal, so padding at the end never reaches real positions.
  Var forward(const Var& x, const Tensor& mask) override;
  bool is_causal() const override { return true; }
  // Streaming: the state is h and c of every layer (B, Hd each), the same cell as the per-step graph.
  StreamState start_stream(int64_t batch) const override;
  Var step(const Var& x, StreamState& s) override;  // (B, I) -> (B, Hd)
  bool streams_in_constant_memory() const override { return true; }
  // ONNX export: one ONNX LSTM node per layer, its weights gathered from PyTorch's gate order (i, f, g, o) into ONNX's
  // (i, o, f, c); the layer-norm variant unrolled over the export length in standard operators (ONNX's LSTM has no
  // norms inside the cell), so its file grows with L (about 15 nodes per step and layer).
  std::string export_onnx(onnx::Graph& g, const onnx::Sequence& in, const std::string& prefix) override;
  double forward_flops(int64_t batch, int64_t L) const override;  // nn/sequence_layer.h's convention

  struct Layer {
    Var w_ih, w_hh, b_ih, b_hh;
    std::shared_ptr<LayerNorm> ln_ih, ln_hh, ln_c;
  };
  std::vector<Layer> layers;
  LSTMOptions opt;
  int64_t input_size, hidden_size;
  Generator* gen;
};

}  // namespace dl::nn
