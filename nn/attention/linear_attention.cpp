// nn/attention/linear_attention.cpp - linear attention and FAVOR+ (math in nn/attention/linear_attention.h).
#include "nn/attention/linear_attention.h"

#include <cmath>

#include "autograd/linalg.h"
#include "autograd/shape_ops.h"
#include "nn/attention/attention.h"
#include "nn/init.h"
#include "nn/onnx/ops.h"

namespace dl::nn {

Var linear_attention(const Var& pq, const Var& pk0, const Var& v, const Tensor& key_mask, bool causal, double eps) {
  if (pq.dim() != 4 || pk0.shape() != pq.shape() || v.dim() != 4 || v.size(2) != pq.size(2))
    fail("linear_attention: expected phi(q), phi(k) (B, NH, T, F) and v (B, NH, T, HS), found " + shape_str(pq.shape()) + ", " +
         shape_str(pk0.shape()) + ", " + shape_str(v.shape()));
  const int64_t B = pq.size(0), T = pq.size(2);
  Var pk = pk0;
  if (key_mask.defined()) {
    if (key_mask.shape() != Shape{B, T})
      fail("linear_attention: mask shape mismatch: expected (B, T) = " + shape_str({B, T}) + ", found " +
           shape_str(key_mask.shape()));
    pk = pk * Var(key_mask.to(pk.dtype()).reshape({B, 1, T, 1}));  // padded keys contribute nothing
  }
  Var num, den;
  if (causal) {
    Var S = cumsum(unsqueeze(pk, -1) * unsqueeze(v, -2), 2);  // (B, NH, T, F, HS): sum_{s<=t} phi(k_s) v_s^T
    num = sum(unsqueeze(pq, -1) * S, {-2});                   // (B, NH, T, HS)
    den = sum(pq * cumsum(pk, 2), {-1}, true);                // (B, NH, T, 1)
  } else {
    Var KV = matmul(transpose(pk, -2, -1), v);      // (B, NH, F, HS)
    num = matmul(pq, KV);                           // (B, NH, T, HS)
    den = matmul(pq, unsqueeze(sum(pk, {2}), -1));  // (B, NH, T, 1)
  }
  return num / (den + eps);
}

Tensor orthogonal_random_features(int64_t m, int64_t hs, Generator& g) {
  Tensor W = zeros({m, hs}, DType::f64);
  for (int64_t r0 = 0; r0 < m; r0 += hs) {
    Tensor Q = init::orthogonal({hs, hs}, g).to(DType::f64).contiguous();  // orthonormal rows
    for (int64_t r = r0; r < std::min(m, r0 + hs); r++) {
      double norm2 = 0;  // chi(hs): the norm of a standard Gaussian hs-vector
      for (int64_t e = 0; e < hs; e++) {
        double z = g.normal();
        norm2 += z * z;
      }
      double nrm = std::sqrt(norm2);
      for (int64_t e = 0; e < hs; e++) W.data<double>()[r * hs + e] = nrm * Q.data<double>()[(r - r0) * hs + e];
    }
  }
  return W.to(DType::f32);
}

Var favor_features(const Var& x0, const Tensor& W, bool is_query, const Tensor& key_mask) {
  const int64_t m = W.size(0), hs = W.size(1);
  if (x0.size(-1) != hs)
    fail("favor_features: head size " + std::to_string(x0.size(-1)) + " != projection width " + std::to_string(hs));
  Var x = x0 * std::pow((double)hs, -0.25);
  Var wx = matmul(x, Var(W.to(x.dtype()).transpose(0, 1)));  // (B, NH, T, m)
  Var sq = sum(x * x, {-1}, true) * 0.5;                     // |x'|^2 / 2: (B, NH, T, 1)
  // the stabiliser c is a constant for the gradient: it cancels in num / den
  Tensor c;
  if (is_query) {
    c = amax(wx.data(), {-1}, true);
  } else {
    c = amax(wx.data(), {-2, -1}, true);
    if (key_mask.defined()) {  // (B, T) -> (B, 1, T, 1); padded rows cannot win the max
      Tensor pad = eq(key_mask.to(c.dtype()).reshape({c.size(0), 1, wx.size(2), 1}), zeros({}, c.dtype()));
      Tensor c_real = amax(masked_fill(wx.data(), pad, -1e30), {-2, -1}, true);
      c = where(lt(c_real, full({}, -1e29, c.dtype())), c, c_real);  // an all-padding row keeps the plain max
    }
  }
  return exp(wx - sq - Var(c)) * (1.0 / std::sqrt((double)m));
}

LinearAttention::LinearAttention(int64_t d, int64_t h, const std::string& feat, bool causal_, Generator& g)
    : heads(h), feature(feat), causal(causal_) {
  if (h <= 0 || d % h)
    fail("LinearAttention: d_model = " + std::to_string(d) + " is not divisible by heads = " + std::to_string(h));
  if (feat != "elu" && feat != "relu" && feat != "favor")
    fail("LinearAttention: unknown feature map '" + feat + "' (known: elu, relu; favor via Performer)");
  q_proj = register_module("q_proj", std::make_shared<Linear>(d, d, g));
  k_proj = register_module("k_proj", std::make_shared<Linear>(d, d, g));
  v_proj = register_module("v_proj", std::make_shared<Linear>(d, d, g));
  out_proj = register_module("out_proj", std::make_shared<Linear>(d, d, g));
}

std::shared_ptr<LinearAttention> LinearAttention::from_config(int64_t d, const LayerConfig& c, Generator& g) {
  check_config_keys(c, "linear_attention", config_keys());
  return std::make_shared<LinearAttention>(d, cfg_int(c, "linear_attention", "heads", 4),
                                           cfg_str(c, "linear_attention", "feature", "elu"),
                                           cfg_bool(c, "linear_attention", "causal", false), g);
}

std::shared_ptr<Performer> Performer::from_config(int64_t d, const LayerConfig& c, Generator& g) {
  check_config_keys(c, "performer", config_keys());
  return std::make_shared<Performer>(d, cfg_int(c, "performer", "heads", 4), cfg_int(c, "performer", "features", 64),
                                     cfg_bool(c, "performer", "causal", false), g);
}

std::string LinearAttention::extra_repr() const {
  return "heads=" + std::to_string(heads) + ", feature=" + feature + (causal ? ", causal" : "");
}

Var LinearAttention::phi(const Var& x, bool, const Tensor&) const { return feature == "elu" ? elu(x) + 1.0 : relu(x); }

Var LinearAttention::forward(const Var& x, const Tensor& mask) {
  Var q = split_heads(q_proj->forward(x), heads);  // (B, NH, T, HS)
  Var k = split_heads(k_proj->forward(x), heads);
  Var v = split_heads(v_proj->forward(x), heads);
  Var y = linear_attention(phi(q, true, mask), phi(k, false, mask), v, mask, causal);  // (B, NH, T, HS)
  return out_proj->forward(merge_heads(y));
}

StreamState LinearAttention::start_stream(int64_t batch) const {
  StreamState s = SequenceLayer::start_stream(batch);  // refuses a bidirectional layer
  if (!streams_in_constant_memory()) return s;
  const int64_t HS = q_proj->out_features / heads;  // elu and relu keep the head size: F = HS
  const Device dev = q_proj->weight.data().device();
  s.t = {zeros({batch, heads, HS, HS}, q_proj->weight.dtype(), dev), zeros({batch, heads, HS}, q_proj->weight.dtype(), dev)};
  return s;
}

Var LinearAttention::step(const Var& x, StreamState& s) {
  if (!streams_in_constant_memory()) return SequenceLayer::step(x, s);
  const int64_t B = x.size(0), C = q_proj->in_features;
  check_step_input(type_name(), x, C);
  check_stream_state(type_name(), s, 2, B);
  Var xt = unsqueeze(x, 1);                                               // (B, 1, C)
  Var pq = phi(split_heads(q_proj->forward(xt), heads), true, Tensor());  // (B, NH, 1, F)
  Var pk = phi(split_heads(k_proj->forward(xt), heads), false, Tensor());
  Var v = split_heads(v_proj->forward(xt), heads);         // (B, NH, 1, HS)
  Var S = Var(s.t[0]) + matmul(transpose(pk, -2, -1), v);  // S_t = S_{t-1} + phi(k_t) v_t^T
  Var z = Var(s.t[1]) + select(pk, 2, 0);                  // z_t = z_{t-1} + phi(k_t)
  s.t = {S.data(), z.data()};
  s.pos++;
  Var y = matmul(pq, S) / (matmul(pq, unsqueeze(z, -1)) + 1e-6);  // phi(q_t)^T S_t / (phi(q_t)^T z_t + eps)
  return reshape(out_proj->forward(merge_heads(y)), {B, C});
}

Performer::Performer(int64_t d, int64_t h, int64_t m_, bool causal_, Generator& g)
    : LinearAttention(d, h, "favor", causal_, g), m(m_) {
  if (m <= 0) fail("Performer: the number of features m must be positive, found " + std::to_string(m));
  register_buffer("feature_projection", orthogonal_random_features(m, d / h, g));
}

void Performer::redraw(Generator& g) {
  buffer("feature_projection").copy_(orthogonal_random_features(m, q_proj->out_features / heads, g));
}

Var Performer::phi(const Var& x, bool is_query, const Tensor& mask) const {
  for (auto& [n, t] : named_buffers())
    if (n == "feature_projection") return favor_features(x, t, is_query, mask);
  fail("Performer: feature_projection buffer missing");
}

// ---- FLOP count (nn/sequence_layer.h's convention) ----
// Per head, with F features: phi(K)^T V (or the causal prefix sums of the outer products phi(k_s) v_s^T: the same
// T F HS multiply-adds) and phi(Q) KV, 2 T F HS each, and the denominators phi(q_t)^T z, 2 T F.
static double linear_attention_flops(double B, double T, double C, double NH, double F) {
  const double HS = C / NH;
  return matmul_flops(B * T, C, 4 * C) + B * NH * (2 * matmul_flops(T, F, HS) + matmul_flops(T, F, 1));  // q k v o
}

double LinearAttention::forward_flops(int64_t batch, int64_t L) const {
  const double C = q_proj->in_features;
  return linear_attention_flops(batch, L, C, heads, C / heads);  // elu / relu keep the head size: F = HS
}

double Performer::forward_flops(int64_t batch, int64_t L) const {
  const double C = q_proj->in_features, HS = C / heads;
  const double features = 2 * batch * heads * matmul_flops(L, HS, m);  // W x' for the queries and the keys
  return linear_attention_flops(batch, L, C, heads, m) + features;
}

// ---- ONNX export: linear_attention() above in standard operators ----
std::string LinearAttention::export_onnx(onnx::Graph& g, const onnx::Sequence& in, const std::string& p) {
  namespace ox = onnx;
  const int64_t T = in.length, C = q_proj->in_features, HS = C / heads;
  auto heads_of = [&](const Linear& proj, const std::string& name) {  // (B, T, C) -> (B, NH, T, HS)
    return ox::transpose(g, ox::reshape(g, ox::linear(g, proj, in.x, p + name + "."), {0, T, heads, HS}), {0, 2, 1, 3});
  };
  std::string pq = export_phi(g, heads_of(*q_proj, "q_proj"), true, in.mask, p);
  std::string pk = export_phi(g, heads_of(*k_proj, "k_proj"), false, in.mask, p);
  std::string v = heads_of(*v_proj, "v_proj");
  if (!in.mask.empty()) pk = ox::mul(g, pk, ox::unsqueeze(g, in.mask, {1, 3}));  // (B, 1, T, 1): padded keys add nothing
  std::string num, den;
  if (causal) {
    std::string time = g.constant(from_vector(std::vector<int64_t>{2}, {}), "time_axis");
    std::string kv = ox::mul(g, ox::unsqueeze(g, pk, {-1}), ox::unsqueeze(g, v, {-2}));  // phi(k_s) v_s^T
    std::string S = g.node("CumSum", {kv, time});                                        // (B, NH, T, F, HS)
    num = g.node("ReduceSum", {ox::mul(g, ox::unsqueeze(g, pq, {-1}), S), g.constant(std::vector<int64_t>{-2})},
                 {ox::attr_int("keepdims", 0)});  // (B, NH, T, HS)
    den = g.node("ReduceSum", {ox::mul(g, pq, g.node("CumSum", {pk, time})), g.constant(std::vector<int64_t>{-1})},
                 {ox::attr_int("keepdims", 1)});  // (B, NH, T, 1)
  } else {
    num = g.node("MatMul", {pq, g.node("MatMul", {ox::transpose(g, pk, {0, 1, 3, 2}), v})});  // phi(Q) (phi(K)^T V)
    std::string z = g.node("ReduceSum", {pk, g.constant(std::vector<int64_t>{2})}, {ox::attr_int("keepdims", 0)});  // (B, NH, F)
    den = g.node("MatMul", {pq, ox::unsqueeze(g, z, {-1})});  // (B, NH, T, 1)
  }
  std::string y = g.node("Div", {num, ox::add(g, den, g.constant(1e-6f))});  // (B, NH, T, HS)
  return ox::linear(g, *out_proj, ox::reshape(g, ox::transpose(g, y, {0, 2, 1, 3}), {0, T, C}), p + "out_proj.");
}

std::string LinearAttention::export_phi(onnx::Graph& g, const std::string& x, bool, const std::string&, const std::string&) {
  return feature == "elu" ? onnx::add(g, g.node("Elu", {x}), g.constant(1.0f)) : g.node("Relu", {x});
}

// phi(x) = exp(W x' - |x'|^2 / 2 - c) / sqrt(m), x' = x / HS^(1/4), line by line as favor_features.
std::string Performer::export_phi(onnx::Graph& g, const std::string& x, bool is_query, const std::string& mask,
                                  const std::string& p) {
  namespace ox = onnx;
  const Tensor& W = buffer("feature_projection");  // (m, HS)
  const int64_t hs = W.size(1);
  auto reduce_max = [&](const std::string& t, std::vector<int64_t> axes) {  // opset 17: axes is an attribute
    return g.node("ReduceMax", {t}, {ox::attr_ints("axes", axes), ox::attr_int("keepdims", 1)});
  };
  std::string xs = ox::mul(g, x, g.constant(float(std::pow((double)hs, -0.25))));  // x' (B, NH, T, HS)
  std::string wx =
      g.node("MatMul", {xs, ox::transpose(g, g.add_initializer(p + "feature_projection", W), {1, 0})});  // (B, NH, T, m)
  std::string sq =
      ox::mul(g, g.node("ReduceSum", {ox::mul(g, xs, xs), g.constant(std::vector<int64_t>{-1})}, {ox::attr_int("keepdims", 1)}),
              g.constant(0.5f));  // |x'|^2 / 2: (B, NH, T, 1)
  std::string c;
  if (is_query) {
    c = reduce_max(wx, {-1});  // (B, NH, T, 1)
  } else {
    c = reduce_max(wx, {2, 3});  // (B, NH, 1, 1)
    if (!mask.empty()) {         // padded rows cannot win the max; an all-padding row keeps the plain max
      std::string pad = g.node("Equal", {ox::unsqueeze(g, mask, {1, 3}), g.constant(0.0f)});  // (B, 1, T, 1)
      std::string c_real = reduce_max(g.node("Where", {pad, g.constant(-1e30f), wx}), {2, 3});
      c = g.node("Where", {g.node("Less", {c_real, g.constant(-1e29f)}), c, c_real});
    }
  }
  std::string e = g.node("Exp", {g.node("Sub", {g.node("Sub", {wx, sq}), c})});
  return ox::mul(g, e, g.constant(float(1.0 / std::sqrt((double)m))));  // (B, NH, T, m)
}

}  // namespace dl::nn
