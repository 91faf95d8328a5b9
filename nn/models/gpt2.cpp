// nn/models/gpt2.cpp - GPT-2 (math and names in nn/models/gpt2.h).
#include "nn/models/gpt2.h"

#include <cmath>

#include "autograd/linalg.h"
#include "nn/fused/fused_attention.h"
#include "nn/fused/qkv_attention.h"
#include "nn/init.h"
#include "nn/onnx/ops.h"
#include "tensor/safetensors.h"

namespace dl::nn {

Conv1D::Conv1D(int64_t in, int64_t out, Generator& g) {
  weight = register_parameter("weight", init::normal({in, out}, 0.02, g));
  bias = register_parameter("bias", zeros({out}));
}

Var Conv1D::forward(const Var& x) const {
  if (x.size(-1) != weight.size(0))
    fail("Conv1D: input feature size mismatch: expected " + std::to_string(weight.size(0)) + ", found input shape " +
         shape_str(x.shape()));
  return matmul(x, weight) + bias;
}

GPT2Attention::GPT2Attention(const GPT2Config& c, Generator& g) : cfg(c) {
  c_attn = register_module("c_attn", std::make_shared<Conv1D>(c.n_embd, 3 * c.n_embd, g));
  c_proj = register_module("c_proj", std::make_shared<Conv1D>(c.n_embd, c.n_embd, g));
  attn_dropout = register_module("attn_dropout", std::make_shared<Dropout>(c.dropout, g));
  resid_dropout = register_module("resid_dropout", std::make_shared<Dropout>(c.dropout, g));
}

Var GPT2Attention::forward(const Var& x, Var* weights) {
  if (record_weights && !weights) {  // an inspection tool asked (record_attention): the composed path, weights kept
    Var w;
    Var y = forward(x, &w);
    record_weights->push_back(w);
    return y;
  }
  const int64_t C = cfg.n_embd;
  Var qkv = c_attn->forward(x);  // (B, T, 3C)
  const bool dropping = is_training() && cfg.dropout > 0;
  if (!weights && !(cfg.fused_attention && !dropping) && x.dtype() == DType::f32 && x.data().device() == Device::cpu)
    // the packed path: one primitive on sgemm, no T x T tensor kept (nn/fused/qkv_attention.h)
    return resid_dropout->forward(
        c_proj->forward(qkv_attention(qkv, cfg.n_head, true, cfg.dropout, is_training(), *attn_dropout->gen, Tensor())));
  Var q = split_heads(narrow(qkv, 2, 0, C), cfg.n_head);  // (B, NH, T, HS)
  Var k = split_heads(narrow(qkv, 2, C, C), cfg.n_head);
  Var v = split_heads(narrow(qkv, 2, 2 * C, C), cfg.n_head);
  Var y;
  if (cfg.fused_attention && !dropping && !weights) {
    y = fused_attention(q, k, v, Tensor(), true);
  } else {
    SDPAOptions o;
    o.causal = true;
    o.dropout = cfg.dropout;
    o.training = is_training();
    o.gen = attn_dropout->gen;
    y = scaled_dot_product_attention(q, k, v, o, weights);
  }
  return resid_dropout->forward(c_proj->forward(merge_heads(y)));
}

Var GPT2Attention::step(const Var& x, Tensor& K, Tensor& V) {
  const int64_t C = cfg.n_embd, B = x.size(0);
  Var qkv = c_attn->forward(unsqueeze(x, 1));  // (B, 1, 3C)
  Var q = split_heads(narrow(qkv, 2, 0, C), cfg.n_head);  // (B, NH, 1, HS)
  Var k = split_heads(narrow(qkv, 2, C, C), cfg.n_head);
  Var v = split_heads(narrow(qkv, 2, 2 * C, C), cfg.n_head);
  return reshape(c_proj->forward(merge_heads(attend_to_cache(q, k, v, K, V))), {B, C});
}

GPT2MLP::GPT2MLP(const GPT2Config& c, Generator& g) {
  c_fc = register_module("c_fc", std::make_shared<Conv1D>(c.n_embd, 4 * c.n_embd, g));
  c_proj = register_module("c_proj", std::make_shared<Conv1D>(4 * c.n_embd, c.n_embd, g));
  dropout = register_module("dropout", std::make_shared<Dropout>(c.dropout, g));
}

Var GPT2MLP::forward(const Var& x) const { return dropout->forward(c_proj->forward(gelu(c_fc->forward(x), true))); }

GPT2Block::GPT2Block(const GPT2Config& c, Generator& g) {
  ln_1 = register_module("ln_1", std::make_shared<LayerNorm>(c.n_embd, c.ln_eps));
  attn = register_module("attn", std::make_shared<GPT2Attention>(c, g));
  ln_2 = register_module("ln_2", std::make_shared<LayerNorm>(c.n_embd, c.ln_eps));
  mlp = register_module("mlp", std::make_shared<GPT2MLP>(c, g));
}

Var GPT2Block::forward(const Var& x0, Var* attention) {
  Var x = x0 + attn->forward(ln_1->forward(x0), attention);
  return x + mlp->forward(ln_2->forward(x));
}

Var GPT2Block::step(const Var& x0, Tensor& K, Tensor& V) {
  Var x = x0 + attn->step(ln_1->forward(x0), K, V);
  return x + mlp->forward(ln_2->forward(x));
}

GPT2Transformer::GPT2Transformer(const GPT2Config& c, Generator& g) : cfg(c) {
  wte = register_module("wte", std::make_shared<Embedding>(c.vocab_size, c.n_embd, g));
  wpe = register_module("wpe", std::make_shared<Embedding>(c.n_positions, c.n_embd, g));
  drop = register_module("drop", std::make_shared<Dropout>(c.dropout, g));
  h = register_module("h", std::make_shared<ModuleList<GPT2Block>>());
  for (int64_t i = 0; i < c.n_layer; i++) h->push_back(std::make_shared<GPT2Block>(c, g));
  ln_f = register_module("ln_f", std::make_shared<LayerNorm>(c.n_embd, c.ln_eps));
}

Var GPT2Transformer::forward(const Var& idx_v) {
  const Tensor& idx = idx_v.data();
  if (idx.dim() != 2 || idx.dtype() != DType::i64)
    fail("GPT2: expected token ids (B, T) of dtype i64, found " + shape_str(idx.shape()) + " " + dtype_name(idx.dtype()));
  return forward_embeds(wte->forward(idx));
}

Var GPT2Transformer::forward_embeds(const Var& embeds, std::vector<Var>* attention) {
  if (embeds.dim() != 3 || embeds.size(2) != cfg.n_embd)
    fail("GPT2: expected input embeddings (B, T, " + std::to_string(cfg.n_embd) + "), found " + shape_str(embeds.shape()));
  const int64_t T = embeds.size(1);
  if (T > cfg.n_positions)
    fail("GPT2: sequence length " + std::to_string(T) + " > n_positions " + std::to_string(cfg.n_positions));
  Var x = drop->forward(embeds + narrow(wpe->weight, 0, 0, T));  // (B, T, C)
  if (attention) attention->assign(h->size(), Var());
  for (size_t i = 0; i < h->size(); i++) x = (*h)[i].forward(x, attention ? &(*attention)[i] : nullptr);
  return ln_f->forward(x);
}

double GPT2Transformer::forward_flops(int64_t batch, int64_t T) const {
  const double BT = (double)batch * T, C = (double)cfg.n_embd;
  const double attention = matmul_flops(BT, C, 3 * C) + 4 * C * batch * attention_pairs(T, true, 0) + matmul_flops(BT, C, C);
  const double mlp = matmul_flops(BT, C, 4 * C) + matmul_flops(BT, 4 * C, C);
  return (double)cfg.n_layer * (attention + mlp);
}

GPT2Model::GPT2Model(const GPT2Config& c, Generator& g) : cfg(c) {
  transformer = register_module("transformer", std::make_shared<GPT2Transformer>(c, g));
  // HF init: every weight N(0, 0.02), biases 0, LayerNorm (1, 0), and the residual projections (c_proj)
  // N(0, 0.02 / sqrt(2 n_layer)) (GPT-2 paper, section 2.3)
  for (auto& [n, p] : named_parameters()) {
    bool is_weight = n.size() >= 7 && n.compare(n.size() - 7, 7, ".weight") == 0;
    if (!is_weight || n.find("ln_") != std::string::npos) continue;
    double std = n.find("c_proj") != std::string::npos ? 0.02 / std::sqrt(2.0 * c.n_layer) : 0.02;
    p.mutable_data().copy_(init::normal(p.shape(), std, g));
  }
}

Var GPT2Model::forward(const Tensor& idx) {
  Var x = transformer->forward(Var(idx));                       // (B, T, C)
  return matmul(x, transpose(transformer->wte->weight, 0, 1));  // (B, T, V), lm_head tied to wte
}

StreamState GPT2Model::start_stream(int64_t batch) const {
  if (batch <= 0) fail("GPT2: start_stream needs a batch of at least 1, found " + std::to_string(batch));
  StreamState s;
  s.t.assign(2 * cfg.n_layer, Tensor());  // block i: keys 2i, values 2i + 1, empty until the first step
  return s;
}

Var GPT2Model::step(const Tensor& ids, StreamState& s) {
  if (ids.dim() != 1 || ids.dtype() != DType::i64)
    fail("GPT2: step takes one token id per sequence (B) i64, found " + shape_str(ids.shape()) + " " + dtype_name(ids.dtype()));
  if ((int64_t)s.t.size() != 2 * cfg.n_layer) fail("GPT2: the stream state does not come from start_stream");
  if (s.pos >= cfg.n_positions)
    fail("GPT2: position " + std::to_string(s.pos) + " is past n_positions " + std::to_string(cfg.n_positions) +
         " (the model has no position embedding for it)");
  auto& tr = *transformer;
  Var x = tr.wte->forward(ids) + select(tr.wpe->weight, 0, s.pos);  // (B, C)
  for (int64_t i = 0; i < cfg.n_layer; i++) x = (*tr.h)[i].step(x, s.t[2 * i], s.t[2 * i + 1]);
  s.pos++;
  return matmul(tr.ln_f->forward(x), transpose(tr.wte->weight, 0, 1));  // (B, V)
}

double GPT2Model::forward_flops(int64_t batch, int64_t T) const {
  return transformer->forward_flops(batch, T) + matmul_flops((double)batch * T, (double)cfg.n_embd, (double)cfg.vocab_size);
}

Var GPT2Model::loss(const Var& logits, const Tensor& targets) const {
  const int64_t V = logits.size(-1);
  return cross_entropy(reshape(logits, {-1, V}), targets.reshape({-1}));
}

GPT2Config gpt2_config_from_file(const std::string& path, int64_t n_head) {
  TensorFile f = load_safetensors(path);
  auto get = [&](const std::string& n) -> const Tensor& {
    if (f.has("transformer." + n)) return f.at("transformer." + n);
    return f.at(n);
  };
  GPT2Config c;
  c.vocab_size = get("wte.weight").size(0);
  c.n_embd = get("wte.weight").size(1);
  c.n_positions = get("wpe.weight").size(0);
  c.n_head = n_head;
  c.n_layer = 0;
  while (f.has("h." + std::to_string(c.n_layer) + ".ln_1.weight") ||
         f.has("transformer.h." + std::to_string(c.n_layer) + ".ln_1.weight"))
    c.n_layer++;
  return c;
}

LoadReport load_gpt2_hf(GPT2Model& m, const std::string& path) {
  TensorFile f = load_safetensors(path);
  std::map<std::string, Tensor> sd;
  auto ends_with = [](const std::string& s, const std::string& e) {
    return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
  };
  for (auto& [n, t] : f.tensors) {
    if (n == "lm_head.weight" || ends_with(n, ".attn.bias") || ends_with(n, ".attn.masked_bias")) continue;
    sd[n.rfind("transformer.", 0) == 0 ? n : "transformer." + n] = t;
  }
  try {
    return m.load_state_dict(sd);
  } catch (const CheckpointError& e) {
    throw CheckpointError(path + ": " + e.what());
  }
}

// ---- ONNX export (docs/onnx.md) ----
// HF's Conv1D: x W + b with W (in, out), so no Transpose.
static std::string conv1d_onnx(onnx::Graph& g, const Conv1D& m, const std::string& x, const std::string& p) {
  return onnx::add(g, g.node("MatMul", {x, g.add_initializer(p + "weight", m.weight.data())}),
                   g.add_initializer(p + "bias", m.bias.data()));
}

// A block's residual stream x after its attention's heads a (B, T, C): x + c_proj(a), then the MLP's residual.
static std::string block_after_attention(onnx::Graph& g, const GPT2Block& b, const std::string& x0, const std::string& a,
                                         const std::string& bp) {
  namespace ox = onnx;
  const std::string x = ox::add(g, x0, conv1d_onnx(g, *b.attn->c_proj, a, bp + "attn.c_proj."));
  const std::string m =
      ox::gelu(g, conv1d_onnx(g, *b.mlp->c_fc, ox::layer_norm(g, *b.ln_2, x, bp + "ln_2."), bp + "mlp.c_fc."), true);
  return ox::add(g, x, conv1d_onnx(g, *b.mlp->c_proj, m, bp + "mlp.c_proj."));
}

std::string GPT2Transformer::export_embeds(onnx::Graph& g, const std::string& embeds, int64_t T, const std::string& p) const {
  namespace ox = onnx;
  if (T < 1 || T > cfg.n_positions)
    fail("GPT2 export: T must be in [1, n_positions = " + std::to_string(cfg.n_positions) + "], found " + std::to_string(T));
  const int64_t C = cfg.n_embd;
  std::string pos = g.node("Slice", {g.add_initializer(p + "wpe.weight", wpe->weight.data()), g.constant(std::vector<int64_t>{0}),
                                     g.constant(std::vector<int64_t>{T}), g.constant(std::vector<int64_t>{0})});  // (T, C)
  std::string x = ox::add(g, embeds, pos);                                                                        // (B, T, C)
  const std::string causal =
      g.constant(attention_allowed(Tensor(), 1, T, T, true, 0, DType::f32, "GPT2 export"), "causal");  // (1, 1, T, T)
  for (size_t i = 0; i < h->size(); i++) {
    const GPT2Block& b = (*h)[i];
    const std::string bp = p + "h." + std::to_string(i) + ".";
    std::string qkv = conv1d_onnx(g, *b.attn->c_attn, ox::layer_norm(g, *b.ln_1, x, bp + "ln_1."), bp + "attn.c_attn.");
    x = block_after_attention(g, b, x, ox::self_attention(g, qkv, T, C, cfg.n_head, causal), bp);
  }
  return ox::layer_norm(g, *ln_f, x, p + "ln_f.");
}

void GPT2Model::export_onnx(onnx::Graph& g, int64_t T) {
  namespace ox = onnx;
  const int64_t V = cfg.vocab_size;
  g.add_input("input_ids", ox::ElemType::i64, {ox::kBatch, T});
  const std::string wte = g.add_initializer("transformer.wte.weight", transformer->wte->weight.data());    // (V, C)
  std::string x = transformer->export_embeds(g, g.node("Gather", {wte, "input_ids"}), T, "transformer.");  // (B, T, C)
  g.add_node("MatMul", {x, ox::transpose(g, wte, {1, 0})}, {"logits"});  // the tied lm_head: (B, T, C) x (C, V)
  g.add_output("logits", ox::ElemType::f32, {ox::kBatch, T, V});
}

void GPT2Model::export_onnx_with_past(onnx::Graph& g) {
  namespace ox = onnx;
  const int64_t C = cfg.n_embd, NH = cfg.n_head, HS = C / NH, V = cfg.vocab_size;
  auto past = [](int64_t i, const char* kv) { return "past_key_values." + std::to_string(i) + "." + kv; };
  auto present = [](int64_t i, const char* kv) { return "present." + std::to_string(i) + "." + kv; };
  g.add_input("input_ids", ox::ElemType::i64, {ox::kBatch, ox::kNew});
  for (int64_t i = 0; i < cfg.n_layer; i++)
    for (const char* kv : {"key", "value"}) g.add_input(past(i, kv), ox::ElemType::f32, {ox::kBatch, NH, ox::kPast, HS});
  // P (cached positions) and S (new ones) from the inputs' shapes, as int64 scalars
  auto scalar = [&](const std::string& v) { return g.node("Squeeze", {v, g.constant(std::vector<int64_t>{0})}); };
  const std::string P = g.node("Shape", {past(0, "key")}, {ox::attr_int("start", 2), ox::attr_int("end", 3)});
  const std::string S = g.node("Shape", {"input_ids"}, {ox::attr_int("start", 1), ox::attr_int("end", 2)});
  const std::string p0 = scalar(P), p1 = scalar(ox::add(g, P, S));
  const std::string zero = scalar(g.constant(std::vector<int64_t>{0})), one = scalar(g.constant(std::vector<int64_t>{1}));
  const std::string qpos = g.node("Range", {p0, p1, one});    // (S): the new tokens' positions
  const std::string kpos = g.node("Range", {zero, p1, one});  // (P + S): every key's
  ox::AttentionShape a;  // allowed: key <= query, (S, P + S) as 0/1 floats, as attention_heads takes it
  a.NH = NH, a.HS = HS;
  a.allowed = g.node("Cast", {g.node("LessOrEqual", {ox::unsqueeze(g, kpos, {0}), ox::unsqueeze(g, qpos, {1})})},
                     {ox::attr_int("to", int64_t(ox::ElemType::f32))});
  const std::string wte = g.add_initializer("transformer.wte.weight", transformer->wte->weight.data());  // (V, C)
  const std::string wpe = g.add_initializer("transformer.wpe.weight", transformer->wpe->weight.data());  // (n_positions, C)
  std::string x = ox::add(g, g.node("Gather", {wte, "input_ids"}), g.node("Gather", {wpe, qpos}));         // (B, S, C)
  auto heads = [&](const std::string& t) { return ox::transpose(g, ox::reshape(g, t, {0, -1, NH, HS}), {0, 2, 1, 3}); };
  for (int64_t i = 0; i < cfg.n_layer; i++) {
    const GPT2Block& b = (*transformer->h)[i];
    const std::string bp = "transformer.h." + std::to_string(i) + ".";
    const std::string qkv = conv1d_onnx(g, *b.attn->c_attn, ox::layer_norm(g, *b.ln_1, x, bp + "ln_1."), bp + "attn.c_attn.");
    std::string q = g.fresh("q"), k = g.fresh("k"), v = g.fresh("v");
    g.add_node("Split", {qkv}, {q, k, v}, {ox::attr_int("axis", -1)});  // (B, S, C) each
    g.add_node("Concat", {past(i, "key"), heads(k)}, {present(i, "key")}, {ox::attr_int("axis", 2)});  // (B, NH, P + S, HS)
    g.add_node("Concat", {past(i, "value"), heads(v)}, {present(i, "value")}, {ox::attr_int("axis", 2)});
    const std::string y = ox::attention_heads(g, heads(q), present(i, "key"), present(i, "value"), a);  // (B, NH, S, HS)
    x = block_after_attention(g, b, x, ox::reshape(g, ox::transpose(g, y, {0, 2, 1, 3}), {0, -1, C}), bp);  // (B, S, C)
  }
  x = ox::layer_norm(g, *transformer->ln_f, x, "transformer.ln_f.");
  g.add_node("MatMul", {x, ox::transpose(g, wte, {1, 0})}, {"logits"});  // the tied lm_head
  g.add_output("logits", ox::ElemType::f32, {ox::kBatch, ox::kNew, V});
  for (int64_t i = 0; i < cfg.n_layer; i++)
    for (const char* kv : {"key", "value"}) g.add_output(present(i, kv), ox::ElemType::f32, {ox::kBatch, NH, ox::kTotal, HS});
}

}  // namespace dl::nn
