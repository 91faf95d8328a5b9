// nn/onnx/ops.h - the pieces layers export with: the basic layers of nn/layers.h and a few compositions, each as
// the standard ONNX operators (opset 17) that compute it. Shape letters: B batch (dynamic), L length, C channels.
//
//   linear        MatMul(x, Transpose(weight)) + bias      weight (out, in) kept as the state_dict has it
//   layer_norm    LayerNormalization(x, weight, bias, axis -1, epsilon)
//   rms_norm      x * Reciprocal(Sqrt(ReduceMean(x * x, -1) + eps)) * weight       (opset 17 has no RMSNorm)
//   batch_norm    (B, L, C) -> Transpose (B, C, L) -> BatchNormalization with the running statistics -> back
//   gelu          0.5 x (1 + Erf(x / sqrt 2)), or the tanh form          (opset 17 has no Gelu: it came in 20)
//   glu           a * Sigmoid(b), (a, b) = Split(x, 2) on the last dim
//   apply_mask    x * Unsqueeze(mask, 2): padded positions zeroed, as nn::apply_mask
//   attention     the composed attention's core (nn/attention/attention.h) on projected q, k, v; self_attention
//                 on a packed qkv
// Every weight becomes an initializer named prefix + its state_dict name ("blocks.0.norm1.weight"). Dropout is the
// identity in eval mode and is not exported.
#pragma once
#include <functional>

#include "nn/layers.h"
#include "nn/onnx/graph.h"

namespace dl::nn::onnx {

std::string linear(Graph& g, const Linear& m, const std::string& x, const std::string& prefix);
std::string layer_norm(Graph& g, const LayerNorm& m, const std::string& x, const std::string& prefix);
std::string rms_norm(Graph& g, const RMSNorm& m, const std::string& x, const std::string& prefix);
std::string batch_norm_sequence(Graph& g, const BatchNorm1d& m, const std::string& x, const std::string& prefix);
// A norm made by nn::make_sequence_norm (LayerNorm or BatchNorm1d) on (B, L, C).
std::string sequence_norm(Graph& g, const Module& norm, const std::string& x, const std::string& prefix);
std::string gelu(Graph& g, const std::string& x, bool tanh_approx = false);
std::string glu(Graph& g, const std::string& x);
// fc2(gelu(fc1(x))), nn::FeedForward in eval mode
std::string feed_forward(Graph& g, const FeedForward& m, const std::string& x, const std::string& prefix);
std::string apply_mask(Graph& g, const std::string& x, const std::string& mask);
// The attention core after the input projections: q (B, Tq, C), k and v (B, Tk, C), C = NH * HS -> (B, Tq, C).
// Split into heads (B, NH, T, HS), [rotate q and k], scores = q k^T [/ sqrt(HS)] [+ bias], Where(allowed, scores,
// -1e9) (the framework's kMasked), Softmax over the keys, times v, heads merged. bias: broadcastable to
// (B, NH, Tq, Tk) (T5's relative position bias) or ""; allowed: 0/1 floats broadcastable to (B, NH, Tq, Tk) or "".
using Rotate = std::function<std::string(const std::string&)>;
struct AttentionShape {
  int64_t Tq = 0, Tk = 0, NH = 1, HS = 0;
  bool scale = true;  // T5 does not divide by sqrt(HS)
  std::string bias, allowed;
  Rotate rotate;
};
std::string attention(Graph& g, const std::string& q, const std::string& k, const std::string& v, const AttentionShape& a);
// The same after the split into heads and before their merge: qh (B, NH, Tq, HS), kh and vh (B, NH, Tk, HS) ->
// (B, NH, Tq, HS); a's Tq and Tk are not read, so the lengths may be dynamic (GPT-2's cached step, whose keys and
// values are the past's with the new ones concatenated).
std::string attention_heads(Graph& g, std::string qh, std::string kh, const std::string& vh, const AttentionShape& a);
// A padding mask (B, S) as `allowed` for attention: (B, 1, 1, S), every query may see the real keys.
std::string key_mask_allowed(Graph& g, const std::string& mask);
// Self-attention after the input projection: qkv (B, T, 3C) = [q | k | v] -> split into NH heads of HS = C / NH,
// [rotate q and k (B, NH, T, HS)], scores = q k^T / sqrt(HS), Where(allowed, scores, -1e9), Softmax over the keys,
// times v, heads merged -> (B, T, C). allowed: 0/1 floats broadcastable to (B, NH, T, T), or "" (every key).
std::string self_attention(Graph& g, const std::string& qkv, int64_t T, int64_t C, int64_t NH, const std::string& allowed,
                           const Rotate& rotate = {});

// Small conveniences: Add, Mul, Transpose(perm), Reshape(to a constant shape; 0 copies the input's dim, so the
// batch passes through), Unsqueeze(axes).
std::string add(Graph& g, const std::string& a, const std::string& b);
std::string mul(Graph& g, const std::string& a, const std::string& b);
std::string transpose(Graph& g, const std::string& x, const std::vector<int64_t>& perm);
std::string reshape(Graph& g, const std::string& x, const std::vector<int64_t>& shape);
std::string unsqueeze(Graph& g, const std::string& x, const std::vector<int64_t>& axes);

}  // namespace dl::nn::onnx
