// nn/sequence_layer.h - the contract every sequence layer of the registry meets, what backbones may ask of it,
// and the helpers layer authors use to validate inputs and configs with messages that name the layer.
//
// A SequenceLayer maps x (B, L, H) to (B, L, H), with an optional padding mask (B, L) (1 = real position).
// Backbones in apps (the LRA encoder, the seq2seq shells, SPT pretraining) stack them with norms and residuals
// (nn/residual_block.h) and know nothing else about them: what an app needs to ask, the layer answers here.
//
//   is_causal()            the layer never looks at later positions (causal LM pretraining needs this)
//   wants_feed_forward()   a backbone should follow it with a position-wise feed-forward sub-block; false for
//                          layers that end in their own (GLU) projection, as the S4 family does
//   own_lr_parameters()    dotted names (relative to the layer) of parameters that train with their own learning
//                          rate and no weight decay (the SSM's A, B, dt, as state-spaces/s4 registers them)
//   learned_kernel(L)      the layer's learned convolution kernel K (channels, H, L) for plots, or undefined
//   start_stream(B), step  a causal layer run as a recurrence, one position at a time (below)
//   export_onnx            the layer as standard ONNX operators (nn/onnx/, docs/onnx.md); the default refuses,
//                          naming the layer, so a model never exports as a silently wrong graph
//   forward_flops(B, L)    FLOPs of one forward over B sequences of L positions (below); the default refuses,
//                          naming the layer, so a new layer without a count is named, never counted as zero
// Shape letters: B batch, L length, H channels (d_model).
//
// Counting FLOPs. A layer counts the arithmetic of its forward as the papers' FLOP figures do: a multiply-add is 2
// FLOPs, and what counts is the products - matrix products (2 M K N), attention's scores and weighted sums,
// convolution taps, a state space kernel's (H, N, L) sums - and FFTs at 5 n log2 n per complex transform of n points
// (Cooley-Tukey's count, the one FFTW's benchmarks quote; a real transform of n points is half: 2.5 n log2 n).
// Elementwise work (activations, gates, softmax, norms, masking, residual sums) is left out: it is O(B L H) and
// memory-bound, and leaving it out keeps a count a reader can check by hand. A training step is counted as 3 x the
// forward (the backward computes two products per forward product: the input's gradient and the weight's), the
// usual convention (Kaplan et al. 2020, "6 N per token"). Counts are doubles (they pass 2^53 only far beyond any
// shape we run). A mask counts only the pairs it allows (a causal attention's triangle), whatever a kernel computes
// and throws away; padding is not known from (B, L) and counts as real positions.
//
// Streaming. A causal layer's output at position t depends on positions 0..t only, so it can run one position at a
// time: s = start_stream(B); then y_t = step(x_t, s) for t = 0, 1, ..., with x_t and y_t (B, H), equals
// forward(x)[:, t] (with right padding, at every real position). The state s holds what the layer carries from
// one position to the next: the recurrence's x_k for the state space layers (O(N) per step, whatever t is), h and c
// for the LSTM, the keys and values so far for attention. A causal layer without a recurrence of its own keeps the
// inputs so far and recomputes its forward over them (O(t) work per step): streams_in_constant_memory() says
// which. A layer that looks at later positions refuses, naming itself. Step in eval mode (no dropout).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nn/module.h"

namespace dl::nn {

namespace onnx {
class Graph;
struct Sequence;
}  // namespace onnx

using LayerConfig = nlohmann::json;

// What a streaming layer carries between positions (see above): its own tensors, its sub-layers' states (a residual
// block's mixer, a model's blocks) and how many positions it has consumed.
struct StreamState {
  std::vector<Tensor> t;
  std::vector<StreamState> children;
  int64_t pos = 0;
  std::shared_ptr<const void> host;  // a layer's own host-side constants for its steps (S4's DPLR step), or null
};

struct SequenceLayer : Module {
  // x: (B, L, H). mask: (B, L) with 1 for real positions and 0 for padding, or undefined (no padding).
  // Returns (B, L, H). Layers that mix along L must not let padding leak into real positions.
  virtual Var forward(const Var& x, const Tensor& mask) = 0;
  virtual bool is_causal() const { return false; }
  virtual bool wants_feed_forward() const { return true; }
  virtual std::vector<std::string> own_lr_parameters() const { return {}; }
  virtual Tensor learned_kernel(int64_t L) { return Tensor(); }

  // The state before the first position, for a batch of B sequences. A layer that is not causal throws, naming it.
  virtual StreamState start_stream(int64_t batch) const;
  // One position: x (B, H) -> y (B, H), advancing s. The default (any causal layer) appends x to the inputs kept in
  // s and returns the last position of forward() over them.
  virtual Var step(const Var& x, StreamState& s);
  virtual bool streams_in_constant_memory() const { return false; }

  // ONNX export (eval mode): adds this layer's nodes to g for in.x (batch, L, H) and the padding mask in.mask, with its
  // weights as initializers named prefix + their state_dict names; returns the value name of the output (batch, L, H).
  // The default throws "layer '<type>' has no ONNX export yet".
  virtual std::string export_onnx(onnx::Graph& g, const onnx::Sequence& in, const std::string& prefix);

  // FLOPs of forward() on x (batch, L, H), by the convention above. The default throws
  // "layer '<type>' has no FLOP count yet", so a layer without a count is named wherever a count is asked for.
  virtual double forward_flops(int64_t batch, int64_t L) const;
};

// ---- FLOP counting (the convention in the box above) ----
// A product (M, K) x (K, N): M N K multiply-adds, 2 M K N FLOPs.
inline double matmul_flops(double M, double K, double N) { return 2.0 * M * K * N; }
// One complex FFT of n points: 5 n log2 n; a real one (rfft or its inverse): half of that. 0 for n <= 1.
double fft_flops(double n);
double rfft_flops(double n);
// A training step (forward and backward) counted as 3 x the forward.
inline double train_step_flops(double forward_flops) { return 3.0 * forward_flops; }

// The own-lr parameters of every SequenceLayer inside `root`, as full dotted names from the root
// (e.g. "blocks.0.mixer.kernel.log_dt"), in the order the tree lists them.
std::vector<std::string> own_lr_parameter_names(const Module& root);

// ---- streaming checks, for a layer's step ----
// x must be one position (B, H); otherwise "layer <name>: step takes one position (B, H), found shape [..]".
void check_step_input(const std::string& layer, const Var& x, int64_t H);
// s must hold `tensors` state tensors of batch B (the first one's dim 0), as the layer's start_stream(B) makes them;
// otherwise "layer <name>: the stream state does not come from start_stream(B)".
void check_stream_state(const std::string& layer, const StreamState& s, size_t tensors, int64_t B);

// ---- input checks ----
// x must be (B, L, H); otherwise "layer <name>: input has F channels, expected H (input shape [..])".
void check_sequence_input(const std::string& layer, const Var& x, int64_t H);
// Zero the padded positions (mask (B, L), 1 = real) so a convolution cannot carry them into real ones.
// Returns x unchanged when mask is undefined.
Var apply_mask(const Var& x, const Tensor& mask);

// ---- config checks: typed access with errors that name the layer, the field, and the expected and found types ----
// Every key of cfg must be in `known`; otherwise "layer <name>: unknown config field 'k' (known: ...)".
void check_config_keys(const LayerConfig& cfg, const std::string& layer, const std::vector<std::string>& known);
int64_t cfg_int(const LayerConfig& c, const std::string& layer, const std::string& key, int64_t def);
double cfg_float(const LayerConfig& c, const std::string& layer, const std::string& key, double def);
bool cfg_bool(const LayerConfig& c, const std::string& layer, const std::string& key, bool def);
std::string cfg_str(const LayerConfig& c, const std::string& layer, const std::string& key, const std::string& def);
// cfg_float for a dropout probability: must lie in [0, 1).
double cfg_dropout(const LayerConfig& c, const std::string& layer, const std::string& key = "dropout");
// "layer <name>: config field '<field>' <what>, found <value>"
[[noreturn]] void config_error(const std::string& layer, const std::string& field, const std::string& what,
                               const std::string& found);

}  // namespace dl::nn
