// nn/attention/linear_attention.h - attention in O(T) time and memory: linear attention (Katharopoulos et al. 2020)
// and Performer's FAVOR+ (Choromanski et al. 2021).
//
// Shape letters: B batch, T time, C channels, NH heads, HS head size, F feature size (HS for elu/relu,
// m for FAVOR+).
//
// Softmax attention is out_t = sum_s sim(q_t, k_s) v_s / sum_s sim(q_t, k_s) with sim = exp(q.k/sqrt(HS)).
// With sim(q, k) = phi(q)^T phi(k) the sums factor:
//   non-causal   KV = phi(K)^T V                      (B, NH, F, HS)    once for all queries
//                z  = sum_s phi(k_s)                  (B, NH, F)
//                out_t = phi(q_t)^T KV / (phi(q_t)^T z + eps)
//   causal       S_t = sum_{s<=t} phi(k_s) v_s^T = cumsum over time of the outer products  (B, NH, T, F, HS)
//                z_t = sum_{s<=t} phi(k_s)        = cumsum of phi(K)                        (B, NH, T, F)
//                out_t = phi(q_t)^T S_t / (phi(q_t)^T z_t + eps)
//   (the causal form equals the quadratic form softmax-free: (phi(Q) phi(K)^T * tril) V / row sums; tested)
// Padding: phi(k_s) = 0 at padded s, so padded keys add nothing to either sum. eps = 1e-6.
//
// Feature maps phi:
//   elu    phi(x) = elu(x) + 1                     (Katharopoulos et al.)
//   relu   phi(x) = relu(x)
//   favor  phi(x) = exp(W x' - |x'|^2 / 2 - c) / sqrt(m),  x' = x / HS^(1/4)  (so q'.k' = q.k / sqrt(HS)),
//          W (m, HS) rows: block-orthogonal Gaussian directions (QR of Gaussian HS x HS blocks) with norms
//          drawn from the chi distribution with HS degrees of freedom, so each row is marginally N(0, I) and
//          E[phi(q)^T phi(k)] = exp(q.k / sqrt(HS)) exactly (positive random features, lower variance than
//          sin/cos). c is a detached stabiliser (the max over features for queries, over real time steps
//          and features for keys) that cancels between numerator and denominator (up to eps).
// Parameters: q_proj, k_proj, v_proj, out_proj (Linear C -> C); Performer adds the buffer
// feature_projection (m, HS), redrawn by redraw(g).
#pragma once
#include "nn/layers.h"
#include "nn/sequence_layer.h"

namespace dl::nn {

// phi_q, phi_k (B, NH, T, F), v (B, NH, T, HS), key_mask (B, T) or undefined -> (B, NH, T, HS).
Var linear_attention(const Var& phi_q, const Var& phi_k, const Var& v, const Tensor& key_mask, bool causal, double eps = 1e-6);

// W (m, HS): block-orthogonal Gaussian rows with chi-distributed norms.
Tensor orthogonal_random_features(int64_t m, int64_t hs, Generator& g);
// FAVOR+ positive features of x (B, NH, T, HS) for projection W (m, HS): (B, NH, T, m). For keys, the
// stabiliser is the max over real positions only (key_mask (B, T), or undefined), so padding cannot move it.
Var favor_features(const Var& x, const Tensor& W, bool is_query, const Tensor& key_mask = Tensor());

class LinearAttention : public SequenceLayer {
 public:
  // feature: "elu" or "relu"
  LinearAttention(int64_t d_model, int64_t heads, const std::string& feature, bool causal, Generator& g);
  // registry "linear_attention": heads [4], feature ["elu"|"relu"], causal [false]
  static std::shared_ptr<LinearAttention> from_config(int64_t d_model, const LayerConfig& c, Generator& g);
  static std::vector<std::string> config_keys() { return {"heads", "feature", "causal"}; }
  std::string type_name() const override { return "LinearAttention"; }
  std::string extra_repr() const override;
  bool is_causal() const override { return causal; }
  Var forward(const Var& x, const Tensor& mask) override;  // (B, T, C) -> (B, T, C)
  // Streaming, causal: the recurrent form, the state the running sums S = sum_s phi(k_s) v_s^T (B, NH, F, HS) and
  // z = sum_s phi(k_s) (B, NH, F): O(F HS) per step whatever the position - linear attention is an RNN. FAVOR+
  // (Performer) streams by recomputing instead: its keys' stabiliser is a maximum over the whole sequence.
  StreamState start_stream(int64_t batch) const override;
  Var step(const Var& x, StreamState& s) override;  // (B, C) -> (B, C)
  bool streams_in_constant_memory() const override { return causal && feature != "favor"; }
  // ONNX export: the same sums as linear_attention(), the causal ones with CumSum over time; the features through
  // export_phi (elu+1 or relu here, FAVOR+ in the Performer).
  std::string export_onnx(onnx::Graph& g, const onnx::Sequence& in, const std::string& prefix) override;
  double forward_flops(int64_t batch, int64_t L) const override;  // nn/sequence_layer.h's convention

  std::shared_ptr<Linear> q_proj, k_proj, v_proj, out_proj;
  int64_t heads;
  std::string feature;
  bool causal;

 protected:
  virtual Var phi(const Var& x, bool is_query, const Tensor& mask) const;
  // phi as ONNX operators: x (B, NH, T, HS) -> (B, NH, T, F); mask (B, T) float or "" (every position real).
  virtual std::string export_phi(onnx::Graph& g, const std::string& x, bool is_query, const std::string& mask,
                                 const std::string& prefix);
};

class Performer : public LinearAttention {
 public:
  Performer(int64_t d_model, int64_t heads, int64_t m, bool causal, Generator& g);
  // registry "performer": heads [4], features (m) [64], causal [false]
  static std::shared_ptr<Performer> from_config(int64_t d_model, const LayerConfig& c, Generator& g);
  static std::vector<std::string> config_keys() { return {"heads", "features", "causal"}; }
  std::string type_name() const override { return "Performer"; }
  // LinearAttention's count with m = features, plus the random feature projection of q and k (2 x 2 L C m)
  double forward_flops(int64_t batch, int64_t L) const override;  // nn/sequence_layer.h's convention
  void redraw(Generator& g);  // draw a new feature_projection
  int64_t m;

 protected:
  Var phi(const Var& x, bool is_query, const Tensor& mask) const override;
  // favor_features in ONNX operators: feature_projection an initializer under its state_dict name, the stabiliser c
  // a ReduceMax (keys: over real positions by Where on the mask, as favor_features).
  std::string export_phi(onnx::Graph& g, const std::string& x, bool is_query, const std::string& mask,
                         const std::string& prefix) override;
};

}  // namespace dl::nn
