// nn/attention/attention.cpp - multi-head attention as a composition of primitives (math in nn/attention/attention.h).
#include "nn/attention/attention.h"

#include <algorithm>
#include <cmath>

#include "autograd/linalg.h"
#include "autograd/shape_ops.h"
#include "nn/attention/positions.h"
#include "nn/fused/flash_attention.h"
#include "nn/fused/fused_attention.h"
#include "nn/fused/qkv_attention.h"
#include "nn/init.h"
#include "nn/onnx/ops.h"

namespace dl::nn {

static constexpr double kMasked = -1e9;  // the fill for disallowed scores (see the header)

Var split_heads(const Var& x, int64_t heads) {
  if (x.dim() != 3 || x.size(2) % heads)
    fail("split_heads: expected (B, T, C) with C divisible by " + std::to_string(heads) + " heads, found " +
         shape_str(x.shape()));
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
  return transpose(reshape(x, {B, T, heads, C / heads}), 1, 2);  // (B, NH, T, HS)
}

Var merge_heads(const Var& x) {
  const int64_t B = x.size(0), NH = x.size(1), T = x.size(2), HS = x.size(3);
  return reshape(transpose(x, 1, 2), {B, T, NH * HS});  // (B, T, C)
}

static Tensor key_mask_f64(const Tensor& key_mask, int64_t B, int64_t S, const char* op) {
  if (!key_mask.defined()) return Tensor();
  if (key_mask.shape() != Shape{B, S})
    fail(std::string(op) + ": mask shape mismatch: expected (B, S) = " + shape_str({B, S}) + ", found " +
         shape_str(key_mask.shape()));
  return key_mask.to(DType::f64).contiguous();
}

std::vector<int64_t> prefix_lengths(const Tensor& prefix, int64_t B, int64_t S, const char* op) {
  if (!prefix.defined()) fail(std::string(op) + ": prefix lengths are undefined");
  if (prefix.dtype() != DType::i64)
    fail(std::string(op) + ": prefix lengths must be an i64 tensor (B), found dtype " + dtype_name(prefix.dtype()));
  if (prefix.shape() != Shape{B})
    fail(std::string(op) + ": prefix lengths shape mismatch: expected (B) = " + shape_str({B}) + ", found " +
         shape_str(prefix.shape()));
  Tensor pc = prefix.contiguous();
  std::vector<int64_t> P(pc.data<int64_t>(), pc.data<int64_t>() + B);
  for (int64_t b = 0; b < B; b++)
    if (P[b] < 0 || P[b] > S)
      fail(std::string(op) + ": prefix length " + std::to_string(P[b]) + " of example " + std::to_string(b) +
           " is outside [0, " + std::to_string(S) + "]");
  return P;
}

Tensor attention_allowed(const Tensor& key_mask, int64_t B, int64_t T, int64_t S, bool causal, int64_t window, DType dt,
                         const char* op, const Tensor& prefix) {
  Tensor km = key_mask_f64(key_mask, B, S, op);
  const std::vector<int64_t> P = prefix.defined() ? prefix_lengths(prefix, B, S, op) : std::vector<int64_t>();
  const int64_t Bm = km.defined() || prefix.defined() ? B : 1;
  Tensor a = zeros({Bm, 1, T, S}, DType::f64);
  double* p = a.data<double>();
  for (int64_t b = 0; b < Bm; b++)
    for (int64_t t = 0; t < T; t++)
      for (int64_t s = 0; s < S; s++) {
        bool ok = !km.defined() || km.data<double>()[b * S + s] != 0;
        if (!P.empty()) ok = ok && (s < P[b] || s <= t + (S - T));  // prefix-LM: the prefix both ways, then causal
        else if (causal) ok = ok && s <= t + (S - T);
        if (window > 0) ok = ok && std::abs(t - s) <= window;
        p[(b * T + t) * S + s] = ok;
      }
  return a.to(dt);
}

Var scaled_dot_product_attention(const Var& q, const Var& k, const Var& v, const SDPAOptions& o, Var* weights) {
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4 || k.shape() != v.shape() || q.size(0) != k.size(0) ||
      q.size(1) != k.size(1) || q.size(3) != k.size(3))
    fail("scaled_dot_product_attention: expected q (B, NH, T, HS), k and v (B, NH, S, HS), found " + shape_str(q.shape()) + ", " +
         shape_str(k.shape()) + ", " + shape_str(v.shape()));
  const int64_t B = q.size(0), T = q.size(2), S = k.size(2), HS = q.size(3);
  Var scores = matmul(q, transpose(k, -2, -1));  // (B, NH, T, S)
  if (o.scale) scores = scores * (1.0 / std::sqrt((double)HS));
  if (o.bias.defined()) scores = scores + o.bias;
  if (o.key_mask.defined() || o.causal || o.window > 0 || o.prefix.defined()) {
    Tensor allowed = attention_allowed(o.key_mask, B, T, S, o.causal, o.window, scores.dtype(), "attention", o.prefix);
    scores = masked_fill(scores, add_scalar(neg(allowed), 1.0), kMasked);  // blocked = 1 - allowed
  }
  Var w = softmax(scores, -1);  // (B, NH, T, S)
  if (weights) *weights = w;
  if (o.training && o.dropout > 0) w = dropout(w, o.dropout, true, o.gen ? *o.gen : default_generator());
  return matmul(w, v);  // (B, NH, T, HS)
}

Var local_attention(const Var& q, const Var& k, const Var& v, const Tensor& key_mask, int64_t w, bool causal) {
  if (w <= 0) fail("local_attention: window must be positive, found " + std::to_string(w));
  if (q.dim() != 4 || k.shape() != q.shape() || v.shape() != q.shape())
    fail("local_attention: expected q, k, v all (B, NH, T, HS), found " + shape_str(q.shape()) + ", " + shape_str(k.shape()) +
         ", " + shape_str(v.shape()));
  const int64_t B = q.size(0), NH = q.size(1), T = q.size(2), HS = q.size(3);
  const int64_t nb = (T + w - 1) / w, Tp = nb * w;  // nb blocks of w (the last one zero-padded)
  Tensor km = key_mask_f64(key_mask, B, T, "local_attention");
  auto blocks = [&](const Var& x) { return reshape(pad(x, {0, 0, 0, Tp - T}), {B, NH, nb, w, HS}); };
  // keys/values of blocks i-1, i, i+1 side by side: (B, NH, nb, 3w, HS)
  auto neighbours = [&](const Var& x) {
    Var xp = pad(blocks(x), {0, 0, 0, 0, 1, 1});  // a zero block at each end: (B, NH, nb+2, w, HS)
    return cat({narrow(xp, 2, 0, nb), narrow(xp, 2, 1, nb), narrow(xp, 2, 2, nb)}, 3);
  };
  Var qb = blocks(q), kb = neighbours(k), vb = neighbours(v);
  Var scores = matmul(qb, transpose(kb, -2, -1)) * (1.0 / std::sqrt((double)HS));  // (B, NH, nb, w, 3w)
  // allowed[b, 0, i, a, c]: query t = i w + a, key s = (i - 1) w + c
  const int64_t Bm = km.defined() ? B : 1;
  Tensor allowed = zeros({Bm, 1, nb, w, 3 * w}, DType::f64);
  double* p = allowed.data<double>();
  for (int64_t b = 0; b < Bm; b++)
    for (int64_t i = 0; i < nb; i++)
      for (int64_t a = 0; a < w; a++)
        for (int64_t c = 0; c < 3 * w; c++) {
          int64_t t = i * w + a, s = (i - 1) * w + c;
          bool ok = s >= 0 && s < T && std::abs(t - s) <= w && (!causal || s <= t);
          if (ok && km.defined()) ok = km.data<double>()[b * T + s] != 0;
          p[(((b * nb + i) * w + a) * 3 * w) + c] = ok;
        }
  scores = masked_fill(scores, add_scalar(neg(allowed.to(scores.dtype())), 1.0), kMasked);
  Var y = matmul(softmax(scores, -1), vb);  // (B, NH, nb, w, HS)
  return narrow(reshape(y, {B, NH, Tp, HS}), 2, 0, T);
}

MultiheadAttention::MultiheadAttention(int64_t d, const AttentionOptions& o, Generator& g) : opt(o), d_model(d), gen_(&g) {
  if (o.heads <= 0 || d % o.heads)
    fail("MultiheadAttention: d_model = " + std::to_string(d) + " is not divisible by heads = " + std::to_string(o.heads));
  if (o.rotary && (d / o.heads) % 2)
    fail("MultiheadAttention: rotary needs an even head size, found " + std::to_string(d / o.heads));
  // as torch.nn.MultiheadAttention._reset_parameters: xavier_uniform in_proj, zero biases
  in_proj_weight = register_parameter("in_proj_weight", init::xavier_uniform({3 * d, d}, g));
  in_proj_bias = register_parameter("in_proj_bias", zeros({3 * d}));
  out_proj = register_module("out_proj", std::make_shared<Linear>(d, d, g));
  out_proj->bias.mutable_data().zero_();
}

std::vector<std::string> MultiheadAttention::config_keys() {
  return {"heads", "dropout", "rotary", "causal", "window", "fused", "packed"};
}

std::shared_ptr<MultiheadAttention> MultiheadAttention::from_config(int64_t d, const LayerConfig& c, Generator& g) {
  check_config_keys(c, "attention", config_keys());
  AttentionOptions o;
  o.heads = cfg_int(c, "attention", "heads", 4);
  o.dropout = cfg_dropout(c, "attention");
  o.rotary = cfg_bool(c, "attention", "rotary", false);
  o.causal = cfg_bool(c, "attention", "causal", false);
  o.window = cfg_int(c, "attention", "window", 0);
  o.fused = cfg_bool(c, "attention", "fused", false);
  o.packed = cfg_bool(c, "attention", "packed", true);
  return std::make_shared<MultiheadAttention>(d, o, g);
}

std::string MultiheadAttention::extra_repr() const {
  std::string s = "d_model=" + std::to_string(d_model) + ", heads=" + std::to_string(opt.heads);
  if (opt.causal) s += ", causal";
  if (opt.rotary) s += ", rotary";
  if (opt.window) s += ", window=" + std::to_string(opt.window);
  if (opt.fused) s += ", fused";
  if (!opt.packed) s += ", packed=false";
  return s;
}

AttentionPath choose_attention_path(const AttentionOptions& o, bool self, bool want_weights, bool training, DType dt,
                                    Device dev, bool prefix, int64_t length, int64_t head_size) {
  // the fused and packed primitives are CPU kernels; a device has the flash primitive (heads up to its kernel's 128)
  const bool fused = o.fused && dev == Device::cpu && !want_weights && !(training && o.dropout > 0) && !(prefix && o.window > 0);
  const bool packable = self && o.packed && !fused && !want_weights && dt == DType::f32;
  if (packable && dev == Device::cpu) {
    if (o.window > 0) return AttentionPath::flash;  // the band: only the blocked kernel has one, at any length
    return length > 0 && length >= o.flash_from ? AttentionPath::flash : AttentionPath::packed;
  }
  if (packable && head_size > 0 && head_size <= kDeviceFlashMaxHead) return AttentionPath::flash;
  if (self && o.window > 0) return prefix ? AttentionPath::composed : AttentionPath::windowed;  // no prefix blocks
  if (fused) return AttentionPath::fused;
  return AttentionPath::composed;
}

Var MultiheadAttention::attend(const Var& x, const Var& mem, const Tensor& mask, bool self, Var* weights,
                               const Tensor& prefix) {
  const int64_t C = d_model;
  if (x.dim() != 3 || x.size(2) != C || mem.dim() != 3 || mem.size(2) != C || mem.size(0) != x.size(0))
    fail("MultiheadAttention: expected x (B, T, " + std::to_string(C) + ") and memory (B, S, " + std::to_string(C) + "), found " +
         shape_str(x.shape()) + " and " + shape_str(mem.shape()));
  const int64_t B = x.size(0), S = mem.size(1);
  if (mask.defined() && mask.shape() != Shape{B, S})
    fail("MultiheadAttention: mask shape mismatch: expected (B, S) = " + shape_str({B, S}) + ", found " +
         shape_str(mask.shape()));
  if (prefix.defined()) prefix_lengths(prefix, B, S, "MultiheadAttention");  // fails early on a bad prefix
  const AttentionPath path =
      choose_attention_path(opt, self, weights != nullptr, is_training(), x.dtype(), x.data().device(), prefix.defined(),
                            x.size(1), C / opt.heads);
  if (path == AttentionPath::packed || path == AttentionPath::flash)
    return out_proj->forward(packed_self_attention(x, mask, prefix, path == AttentionPath::flash));
  if (path == AttentionPath::windowed && weights) fail("MultiheadAttention: windowed attention does not return weights");
  Var q = split_heads(linear(x, narrow(in_proj_weight, 0, 0, C), narrow(in_proj_bias, 0, 0, C)), opt.heads);    // (B, NH, T, HS)
  Var k = split_heads(linear(mem, narrow(in_proj_weight, 0, C, C), narrow(in_proj_bias, 0, C, C)), opt.heads);  // (B, NH, S, HS)
  Var v = split_heads(linear(mem, narrow(in_proj_weight, 0, 2 * C, C), narrow(in_proj_bias, 0, 2 * C, C)), opt.heads);
  const bool causal = self && opt.causal;
  if (self && opt.rotary) {
    q = apply_rotary(q);
    k = apply_rotary(k);
  }
  Var y;
  if (path == AttentionPath::windowed) {
    y = local_attention(q, k, v, mask, opt.window, causal);
  } else if (path == AttentionPath::fused) {
    y = fused_attention(q, k, v, mask, causal, prefix);
  } else {
    SDPAOptions o;
    o.key_mask = mask;
    o.causal = causal;
    o.prefix = prefix;
    o.window = self && prefix.defined() ? opt.window : 0;  // a windowed prefix-LM runs here (see the path table)
    o.dropout = opt.dropout;
    o.training = is_training();
    o.gen = gen_;
    y = scaled_dot_product_attention(q, k, v, o, weights);
  }
  return out_proj->forward(merge_heads(y));  // (B, T, C)
}

// The same self-attention on the packed projection qkv = x W_in^T + b_in (B, T, 3C): one primitive runs the scores,
// softmax, dropout and weighted sum per (b, h), on sgemm (nn/fused/qkv_attention.h) or, when `flash`, blocked with the
// online softmax (nn/fused/flash_attention.h). Rotary positions turn q and k in place.
Var MultiheadAttention::packed_self_attention(const Var& x, const Tensor& mask, const Tensor& prefix, bool flash) {
  const int64_t C = d_model;
  Var qkv = linear(x, in_proj_weight, in_proj_bias);  // (B, T, 3C) = [q | k | v]
  if (opt.rotary) {
    Var q = merge_heads(apply_rotary(split_heads(narrow(qkv, 2, 0, C), opt.heads)));
    Var k = merge_heads(apply_rotary(split_heads(narrow(qkv, 2, C, C), opt.heads)));
    qkv = cat({q, k, narrow(qkv, 2, 2 * C, C)}, 2);
  }
  if (flash) return flash_attention(qkv, opt.heads, opt.causal, opt.dropout, is_training(), *gen_, mask, prefix, opt.window);
  return qkv_attention(qkv, opt.heads, opt.causal, opt.dropout, is_training(), *gen_, mask, prefix);  // (B, T, C)
}

Var attend_to_cache(const Var& q, const Var& k, const Var& v, Tensor& K, Tensor& V, int64_t window) {
  Var Kc = K.defined() ? cat({Var(K), k}, 2) : k, Vc = V.defined() ? cat({Var(V), v}, 2) : v;  // (B, NH, t + 1, HS)
  if (window > 0 && Kc.size(2) > window + 1)
    Kc = narrow(Kc, 2, Kc.size(2) - window - 1, window + 1), Vc = narrow(Vc, 2, Vc.size(2) - window - 1, window + 1);
  K = Kc.data(), V = Vc.data();
  return scaled_dot_product_attention(q, Kc, Vc, SDPAOptions{}, nullptr);
}

Var MultiheadAttention::step(const Var& x, StreamState& s) {
  if (!opt.causal) return SequenceLayer::step(x, s);  // refuses, naming the layer
  const int64_t C = d_model, B = x.size(0);
  check_step_input(type_name(), x, C);
  Var xt = unsqueeze(x, 1);  // (B, 1, C)
  Var q = split_heads(linear(xt, narrow(in_proj_weight, 0, 0, C), narrow(in_proj_bias, 0, 0, C)), opt.heads);  // (B, NH, 1, HS)
  Var k = split_heads(linear(xt, narrow(in_proj_weight, 0, C, C), narrow(in_proj_bias, 0, C, C)), opt.heads);
  Var v = split_heads(linear(xt, narrow(in_proj_weight, 0, 2 * C, C), narrow(in_proj_bias, 0, 2 * C, C)), opt.heads);
  if (opt.rotary) q = apply_rotary(q, s.pos), k = apply_rotary(k, s.pos);  // turned at this position
  if (s.t.empty()) s.t.resize(2);                                           // the keys and values so far
  Var y = attend_to_cache(q, k, v, s.t[0], s.t[1], opt.window);
  s.pos++;
  return reshape(out_proj->forward(merge_heads(y)), {B, C});
}

Var MultiheadAttention::forward(const Var& x, const Tensor& key_mask) {
  if (!record_weights) return attend(x, x, key_mask, true, nullptr);
  Var w;
  Var y = attend(x, x, key_mask, true, &w);
  record_weights->push_back(w);
  return y;
}

Var MultiheadAttention::forward_with_weights(const Var& x, const Tensor& key_mask, Var* weights) {
  return attend(x, x, key_mask, true, weights);
}

Var MultiheadAttention::forward_prefix(const Var& x, const Tensor& key_mask, const Tensor& prefix, Var* weights) {
  if (!prefix.defined()) fail("MultiheadAttention::forward_prefix: prefix lengths are undefined (use forward)");
  return attend(x, x, key_mask, true, weights, prefix);
}

Var MultiheadAttention::cross(const Var& x, const Var& memory, const Tensor& memory_mask, Var* weights) {
  return attend(x, memory, memory_mask, false, weights);
}

// ---- ONNX export: the composed path, in standard operators (docs/onnx.md) ----
// RoPE as apply_rotary computes it (positions.h): the interleaved pairs (x[2i], x[2i+1]) of each head vector rotated
// by t theta_i, with the cos and sin tables (T, HS/2, 1) computed here: x (B, NH, T, HS) -> (B, NH, T, HS).
static std::string rotary_onnx(onnx::Graph& g, const std::string& x, int64_t T, int64_t HS, const std::string& p) {
  namespace ox = onnx;
  Tensor c = zeros({T, HS / 2, 1}), s = zeros({T, HS / 2, 1});
  for (int64_t t = 0; t < T; t++)
    for (int64_t i = 0; i < HS / 2; i++) {
      const double a = double(t) * std::pow(10000.0, -2.0 * i / double(HS));
      c.data<float>()[t * (HS / 2) + i] = float(std::cos(a));
      s.data<float>()[t * (HS / 2) + i] = float(std::sin(a));
    }
  const std::string cv = g.constant(c, p + "rotary_cos"), sv = g.constant(s, p + "rotary_sin");
  std::string xe = g.fresh("rope_even"), xo = g.fresh("rope_odd");
  g.add_node("Split", {ox::reshape(g, x, {0, 0, T, HS / 2, 2})}, {xe, xo}, {ox::attr_int("axis", -1)});  // (B, NH, T, HS/2, 1)
  std::string ye = g.node("Sub", {ox::mul(g, xe, cv), ox::mul(g, xo, sv)});                              // xe cos - xo sin
  std::string yo = ox::add(g, ox::mul(g, xe, sv), ox::mul(g, xo, cv));                                   // xe sin + xo cos
  return ox::reshape(g, g.node("Concat", {ye, yo}, {ox::attr_int("axis", -1)}), {0, 0, T, HS});
}

std::string MultiheadAttention::export_onnx(onnx::Graph& g, const onnx::Sequence& in, const std::string& p) {
  namespace ox = onnx;
  const int64_t T = in.length, C = d_model, NH = opt.heads, HS = C / NH;
  std::string w_in = ox::transpose(g, g.add_initializer(p + "in_proj_weight", in_proj_weight.data()), {1, 0});  // (C, 3C)
  std::string b_in = g.add_initializer(p + "in_proj_bias", in_proj_bias.data());
  std::string qkv = ox::add(g, g.node("MatMul", {in.x, w_in}), b_in);  // (B, T, 3C)
  // allowed (B or 1, 1, T, T) as 0/1 floats: the fixed causal/band part, times the key mask
  std::string allowed;
  if (opt.causal || opt.window > 0)
    allowed = g.constant(attention_allowed(Tensor(), 1, T, T, opt.causal, opt.window, DType::f32, "MultiheadAttention export"),
                         p + "allowed");
  if (!in.mask.empty()) {
    std::string km = ox::unsqueeze(g, in.mask, {1, 2});  // (B, 1, 1, T)
    allowed = allowed.empty() ? km : ox::mul(g, allowed, km);
  }
  ox::Rotate rope;
  if (opt.rotary) rope = [&](const std::string& x) { return rotary_onnx(g, x, T, HS, p); };
  return ox::linear(g, *out_proj, ox::self_attention(g, qkv, T, C, NH, allowed, rope), p + "out_proj.");
}

// ---- FLOP count (nn/sequence_layer.h's convention) ----
double attention_pairs(int64_t T, bool causal, int64_t window) {
  if (window <= 0) return causal ? 0.5 * T * (T + 1) : (double)T * T;
  double pairs = 0;  // per query t: the keys s with |t - s| <= w (and s <= t when causal)
  for (int64_t t = 0; t < T; t++) pairs += std::min(T - 1, causal ? t : t + window) - std::max<int64_t>(0, t - window) + 1;
  return pairs;
}

double MultiheadAttention::forward_flops(int64_t batch, int64_t L) const {
  const double C = d_model, rows = (double)batch * L;
  const double projections = matmul_flops(rows, C, 3 * C) + matmul_flops(rows, C, C);  // in_proj (C -> 3C), out_proj
  return projections + batch * attention_pairs(L, opt.causal, opt.window) * 4 * C;     // q.k and p v: 2 HS per head each
}

}  // namespace dl::nn
