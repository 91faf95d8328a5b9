// nn/onnx/ops.cpp - see ops.h.
#include "nn/onnx/ops.h"

#include <cmath>

namespace dl::nn::onnx {

std::string add(Graph& g, const std::string& a, const std::string& b) { return g.node("Add", {a, b}); }
std::string mul(Graph& g, const std::string& a, const std::string& b) { return g.node("Mul", {a, b}); }
std::string transpose(Graph& g, const std::string& x, const std::vector<int64_t>& perm) {
  return g.node("Transpose", {x}, {attr_ints("perm", perm)});
}
std::string reshape(Graph& g, const std::string& x, const std::vector<int64_t>& shape) {
  return g.node("Reshape", {x, g.constant(shape)});
}
std::string unsqueeze(Graph& g, const std::string& x, const std::vector<int64_t>& axes) {
  return g.node("Unsqueeze", {x, g.constant(axes)});
}

std::string linear(Graph& g, const Linear& m, const std::string& x, const std::string& prefix) {
  const std::string w = g.add_initializer(prefix + "weight", m.weight.data());  // (out, in)
  std::string y = g.node("MatMul", {x, transpose(g, w, {1, 0})});               // (..., out)
  if (m.bias.defined()) y = add(g, y, g.add_initializer(prefix + "bias", m.bias.data()));
  return y;
}

std::string layer_norm(Graph& g, const LayerNorm& m, const std::string& x, const std::string& prefix) {
  return g.node("LayerNormalization",
                {x, g.add_initializer(prefix + "weight", m.weight.data()), g.add_initializer(prefix + "bias", m.bias.data())},
                {attr_int("axis", -1), attr_float("epsilon", float(m.eps))});
}

std::string rms_norm(Graph& g, const RMSNorm& m, const std::string& x, const std::string& prefix) {
  std::string ms = g.node("ReduceMean", {mul(g, x, x)}, {attr_ints("axes", {-1}), attr_int("keepdims", 1)});  // (..., 1)
  std::string inv = g.node("Reciprocal", {g.node("Sqrt", {add(g, ms, g.constant(float(m.eps)))})});
  return mul(g, mul(g, x, inv), g.add_initializer(prefix + "weight", m.weight.data()));
}

std::string batch_norm_sequence(Graph& g, const BatchNorm1d& m, const std::string& x, const std::string& prefix) {
  auto sd = m.state_dict();
  std::string y = g.node(
      "BatchNormalization",
      {transpose(g, x, {0, 2, 1}), g.add_initializer(prefix + "weight", sd.at("weight")),
       g.add_initializer(prefix + "bias", sd.at("bias")), g.add_initializer(prefix + "running_mean", sd.at("running_mean")),
       g.add_initializer(prefix + "running_var", sd.at("running_var"))},
      {attr_float("epsilon", float(m.eps))});  // (B, C, L), eval: the running statistics
  return transpose(g, y, {0, 2, 1});
}

std::string sequence_norm(Graph& g, const Module& norm, const std::string& x, const std::string& prefix) {
  if (auto* ln = dynamic_cast<const LayerNorm*>(&norm)) return layer_norm(g, *ln, x, prefix);
  if (auto* bn = dynamic_cast<const BatchNorm1d*>(&norm)) return batch_norm_sequence(g, *bn, x, prefix);
  fail("onnx export: " + norm.type_name() + " (" + prefix + ") is not a sequence norm (LayerNorm or BatchNorm1d)");
}

std::string gelu(Graph& g, const std::string& x, bool tanh_approx) {
  std::string inner;
  if (tanh_approx) {  // tanh(sqrt(2/pi) (x + 0.044715 x^3))
    std::string x3 = mul(g, mul(g, x, x), x);
    std::string s = add(g, x, mul(g, x3, g.constant(0.044715f)));
    inner = g.node("Tanh", {mul(g, s, g.constant(float(std::sqrt(2.0 / M_PI))))});
  } else {  // erf(x / sqrt 2)
    inner = g.node("Erf", {mul(g, x, g.constant(float(1.0 / std::sqrt(2.0))))});
  }
  std::string half_x = mul(g, x, g.constant(0.5f));
  return mul(g, half_x, add(g, inner, g.constant(1.0f)));
}

std::string glu(Graph& g, const std::string& x) {
  std::string a = g.fresh("glu_a"), b = g.fresh("glu_b");
  g.add_node("Split", {x}, {a, b}, {attr_int("axis", -1)});  // two equal halves of the last dim
  return mul(g, a, g.node("Sigmoid", {b}));
}

std::string feed_forward(Graph& g, const FeedForward& m, const std::string& x, const std::string& prefix) {
  return linear(g, *m.fc2, gelu(g, linear(g, *m.fc1, x, prefix + "fc1.")), prefix + "fc2.");
}

std::string apply_mask(Graph& g, const std::string& x, const std::string& mask) {
  if (mask.empty()) return x;
  return mul(g, x, unsqueeze(g, mask, {2}));  // (B, L, C) * (B, L, 1)
}

std::string attention(Graph& g, const std::string& q, const std::string& k, const std::string& v, const AttentionShape& a) {
  const int64_t C = a.NH * a.HS;
  auto heads = [&](const std::string& t, int64_t T) { return transpose(g, reshape(g, t, {0, T, a.NH, a.HS}), {0, 2, 1, 3}); };
  const std::string y = attention_heads(g, heads(q, a.Tq), heads(k, a.Tk), heads(v, a.Tk), a);  // (B, NH, Tq, HS)
  return reshape(g, transpose(g, y, {0, 2, 1, 3}), {0, a.Tq, C});                              // (B, Tq, C)
}

std::string attention_heads(Graph& g, std::string qh, std::string kh, const std::string& vh, const AttentionShape& a) {
  if (a.rotate) qh = a.rotate(qh), kh = a.rotate(kh);
  std::string scores = g.node("MatMul", {qh, transpose(g, kh, {0, 1, 3, 2})});  // (B, NH, Tq, Tk)
  if (a.scale) scores = mul(g, scores, g.constant(float(1.0 / std::sqrt(double(a.HS)))));
  if (!a.bias.empty()) scores = add(g, scores, a.bias);
  if (!a.allowed.empty())  // a large finite value, as the framework's, so a row with no allowed key stays finite
    scores =
        g.node("Where", {g.node("Cast", {a.allowed}, {attr_int("to", int64_t(ElemType::boolean))}), scores, g.constant(-1e9f)});
  std::string w = g.node("Softmax", {scores}, {attr_int("axis", -1)});
  return g.node("MatMul", {w, vh});  // (B, NH, Tq, HS)
}

std::string self_attention(Graph& g, const std::string& qkv, int64_t T, int64_t C, int64_t NH, const std::string& allowed,
                           const Rotate& rotate) {
  std::string q = g.fresh("q"), k = g.fresh("k"), v = g.fresh("v");
  g.add_node("Split", {qkv}, {q, k, v}, {attr_int("axis", -1)});  // (B, T, C) each
  AttentionShape a;
  a.Tq = T, a.Tk = T, a.NH = NH, a.HS = C / NH, a.allowed = allowed, a.rotate = rotate;
  return attention(g, q, k, v, a);
}

std::string key_mask_allowed(Graph& g, const std::string& mask) { return unsqueeze(g, mask, {1, 2}); }

}  // namespace dl::nn::onnx
