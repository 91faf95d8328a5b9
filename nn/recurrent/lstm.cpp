// nn/recurrent/lstm.cpp - the composed LSTM cell and the multi-layer LSTM (math in nn/recurrent/lstm.h; the fused
// cell and the whole-layer node are nn/fused/lstm_kernels.h).
#include "nn/recurrent/lstm.h"

#include <algorithm>
#include <cmath>

#include "autograd/linalg.h"
#include "autograd/shape_ops.h"
#include "nn/onnx/ops.h"

namespace dl::nn {

Var lstm_cell_composed(const Var& gates, const Var& c) {
  const int64_t Hd = c.size(1);
  Var i = sigmoid(narrow(gates, 1, 0, Hd)), f = sigmoid(narrow(gates, 1, Hd, Hd));
  Var g = tanh(narrow(gates, 1, 2 * Hd, Hd)), o = sigmoid(narrow(gates, 1, 3 * Hd, Hd));
  Var cn = f * c + i * g;    // (B, Hd)
  Var h = o * tanh(cn);      // (B, Hd)
  return stack({h, cn}, 1);  // (B, 2, Hd)
}

LSTM::LSTM(int64_t in, int64_t hid, const LSTMOptions& o, Generator& g) : opt(o), input_size(in), hidden_size(hid), gen(&g) {
  if (o.num_layers < 1) fail("LSTM: num_layers must be >= 1, found " + std::to_string(o.num_layers));
  const double a = 1.0 / std::sqrt((double)hid);
  for (int64_t k = 0; k < o.num_layers; k++) {
    const std::string s = std::to_string(k);
    const int64_t fin = k == 0 ? in : hid;
    Layer l;
    l.w_ih = register_parameter("weight_ih_l" + s, uniform({4 * hid, fin}, -a, a, g));
    l.w_hh = register_parameter("weight_hh_l" + s, uniform({4 * hid, hid}, -a, a, g));
    l.b_ih = register_parameter("bias_ih_l" + s, uniform({4 * hid}, -a, a, g));
    l.b_hh = register_parameter("bias_hh_l" + s, uniform({4 * hid}, -a, a, g));
    if (o.layer_norm) {
      l.ln_ih = register_module("ln_ih_l" + s, std::make_shared<LayerNorm>(4 * hid));
      l.ln_hh = register_module("ln_hh_l" + s, std::make_shared<LayerNorm>(4 * hid));
      l.ln_c = register_module("ln_c_l" + s, std::make_shared<LayerNorm>(hid));
    }
    layers.push_back(l);
  }
}

std::string LSTM::extra_repr() const {
  return "input=" + std::to_string(input_size) + ", hidden=" + std::to_string(hidden_size) +
         ", layers=" + std::to_string(opt.num_layers) + (opt.layer_norm ? ", layer_norm" : "") +
         (opt.sequence ? ", sequence node" : "") + (opt.fused ? ", fused cell" : "");
}

std::shared_ptr<LSTM> LSTM::from_config(int64_t d_model, const LayerConfig& cfg, Generator& g) {
  const std::string L = "lstm";
  check_config_keys(cfg, L, config_keys());
  LSTMOptions o;
  o.num_layers = cfg_int(cfg, L, "num_layers", 1);
  if (o.num_layers < 1) config_error(L, "num_layers", "must be >= 1", std::to_string(o.num_layers));
  o.layer_norm = cfg_bool(cfg, L, "layer_norm", false);
  o.fused = cfg_bool(cfg, L, "fused", true);
  o.sequence = cfg_bool(cfg, L, "sequence", true);
  o.dropout = cfg_dropout(cfg, L);
  return std::make_shared<LSTM>(d_model, d_model, o, g);
}

Var LSTM::forward(const Var& x, const Tensor& mask) {
  check_sequence_input(opt.layer_norm ? "lstm (layer_norm)" : "lstm", x, input_size);
  const int64_t B = x.size(0), L = x.size(1), Hd = hidden_size;
  Var seq = apply_mask(x, mask);  // (B, L, I)
  for (size_t k = 0; k < layers.size(); k++) {
    const Layer& l = layers[k];
    if (k > 0) seq = dropout(seq, opt.dropout, is_training(), *gen);
    if (opt.sequence && !opt.layer_norm && seq.dtype() == DType::f32 && seq.data().device() == Device::cpu) {
      seq = lstm_sequence(seq, l.w_ih, l.w_hh, l.b_ih, l.b_hh);  // (B, L, Hd)
      continue;
    }
    // the per-step graph; input projection of every step at once: (B, L, 4Hd)
    Var xg = opt.layer_norm ? l.ln_ih->forward(linear(seq, l.w_ih)) + l.b_ih : linear(seq, l.w_ih, l.b_ih);
    const Device dev = seq.data().device();  // on a device: this per-step graph, its states there too
    Var h(zeros({B, Hd}, x.dtype(), dev)), c(zeros({B, Hd}, x.dtype(), dev));
    std::vector<Var> outs;
    for (int64_t t = 0; t < L; t++) {
      Var gates;
      if (opt.layer_norm) {
        gates = select(xg, 1, t) + l.ln_hh->forward(linear(h, l.w_hh)) + l.b_hh;  // (B, 4Hd)
        Var i = sigmoid(narrow(gates, 1, 0, Hd)), f = sigmoid(narrow(gates, 1, Hd, Hd));
        Var g = tanh(narrow(gates, 1, 2 * Hd, Hd)), o = sigmoid(narrow(gates, 1, 3 * Hd, Hd));
        c = f * c + i * g;
        h = o * tanh(l.ln_c->forward(c));
      } else {
        gates = select(xg, 1, t) + linear(h, l.w_hh, l.b_hh);                           // (B, 4Hd)
        // the fused cell: one node (on a device the backend's cell, one launch), or its composed twin
        Var hc = opt.fused ? lstm_cell_fused(gates, c) : lstm_cell_composed(gates, c);  // (B, 2, Hd)
        h = select(hc, 1, 0), c = select(hc, 1, 1);
      }
      outs.push_back(h);
    }
    seq = stack(outs, 1);  // (B, L, Hd)
  }
  return seq;
}

StreamState LSTM::start_stream(int64_t batch) const {
  StreamState s = SequenceLayer::start_stream(batch);
  const Device dev = layers.at(0).w_ih.data().device();
  for (size_t k = 0; k < layers.size(); k++)
    s.t.push_back(zeros({batch, hidden_size}, layers[k].w_ih.dtype(), dev)),
        s.t.push_back(zeros({batch, hidden_size}, layers[k].w_ih.dtype(), dev));
  return s;
}

Var LSTM::step(const Var& x, StreamState& s) {
  check_step_input(type_name(), x, input_size);
  check_stream_state(type_name(), s, 2 * layers.size(), x.size(0));
  const int64_t Hd = hidden_size;
  Var in = x;
  for (size_t k = 0; k < layers.size(); k++) {
    const Layer& l = layers[k];
    if (k > 0) in = dropout(in, opt.dropout, is_training(), *gen);
    Var h(s.t[2 * k]), c(s.t[2 * k + 1]);
    if (opt.layer_norm) {
      Var gates = l.ln_ih->forward(linear(in, l.w_ih)) + l.b_ih + l.ln_hh->forward(linear(h, l.w_hh)) + l.b_hh;
      Var i = sigmoid(narrow(gates, 1, 0, Hd)), f = sigmoid(narrow(gates, 1, Hd, Hd));
      Var g = tanh(narrow(gates, 1, 2 * Hd, Hd)), o = sigmoid(narrow(gates, 1, 3 * Hd, Hd));
      c = f * c + i * g;
      h = o * tanh(l.ln_c->forward(c));
    } else {
      Var hc = lstm_cell_composed(linear(in, l.w_ih, l.b_ih) + linear(h, l.w_hh, l.b_hh), c);  // (B, 2, Hd)
      h = select(hc, 1, 0), c = select(hc, 1, 1);
    }
    s.t[2 * k] = h.data(), s.t[2 * k + 1] = c.data();
    in = h;
  }
  s.pos++;
  return in;
}

// ---- ONNX export ----
// The layer-norm variant: ONNX's LSTM has no norms inside its cell, so each layer is a Scan over the positions whose
// body is the forward's per-step graph line by line (the recurrent weights and norms are the body's initializers,
// under their state_dict names). Until 2026-12-07 the L steps were unrolled: FPT's bit_memory LSTM (3 layers, L = 60)
// was 2732 nodes, about 23,000 per three layers at L = 512; a Scan is the same numbers at any length.
//   xg    = LN_ih(x W_ih^T) + b_ih                                  (B, L, 4Hd), every step at once
//   body: gates = xg[:, t] + LN_hh(h W_hh^T) + b_hh                  (B, 4Hd)
//         c     = f c + i g,   h = o tanh(LN_c(c))                   (B, Hd); the states start as zeros
static std::string export_layer_norm_lstm(onnx::Graph& g, const LSTM& m, const onnx::Sequence& in, const std::string& p) {
  namespace ox = onnx;
  const int64_t Hd = m.hidden_size;
  std::string seq = ox::apply_mask(g, in.x, in.mask);                                                    // (B, L, I)
  const std::string batch = g.node("Shape", {seq}, {ox::attr_int("start", 0), ox::attr_int("end", 1)});  // [B]
  const std::string zeros = g.node("ConstantOfShape", {g.node("Concat", {batch, g.constant(std::vector<int64_t>{Hd})},
                                                              {ox::attr_int("axis", 0)})});  // (B, Hd) of 0.f
  for (size_t k = 0; k < m.layers.size(); k++) {
    const LSTM::Layer& l = m.layers[k];
    const std::string n = std::to_string(k);
    const std::string w_ih = ox::transpose(g, g.add_initializer(p + "weight_ih_l" + n, l.w_ih.data()), {1, 0});  // (I, 4Hd)
    std::string xg = ox::layer_norm(g, *l.ln_ih, g.node("MatMul", {seq, w_ih}), p + "ln_ih_l" + n + ".");
    xg = ox::add(g, xg, g.add_initializer(p + "bias_ih_l" + n, l.b_ih.data()));  // (B, L, 4Hd)
    // one step: states h, c and the slice x of xg in, the new h and c and the step's output out
    ox::Graph b = g.body(p + "cell_l" + n, g.fresh("scan") + "_");  // a fresh name of g: a tag no other body has
    const std::string h = b.fresh("h"), c = b.fresh("c"), x = b.fresh("x");
    b.add_input(h, ox::ElemType::f32, {ox::kBatch, Hd});
    b.add_input(c, ox::ElemType::f32, {ox::kBatch, Hd});
    b.add_input(x, ox::ElemType::f32, {ox::kBatch, 4 * Hd});
    const std::string w_hh = ox::transpose(b, b.add_initializer(p + "weight_hh_l" + n, l.w_hh.data()), {1, 0});  // (Hd, 4Hd)
    const std::string rec = ox::layer_norm(b, *l.ln_hh, b.node("MatMul", {h, w_hh}), p + "ln_hh_l" + n + ".");
    const std::string gates = ox::add(b, ox::add(b, x, rec), b.add_initializer(p + "bias_hh_l" + n, l.b_hh.data()));
    std::vector<std::string> ifgo = {b.fresh("i"), b.fresh("f"), b.fresh("g"), b.fresh("o")};  // PyTorch's order
    b.add_node("Split", {gates}, ifgo, {ox::attr_int("axis", -1)});
    const std::string i = b.node("Sigmoid", {ifgo[0]}), f = b.node("Sigmoid", {ifgo[1]});
    const std::string gg = b.node("Tanh", {ifgo[2]}), o = b.node("Sigmoid", {ifgo[3]});
    const std::string c2 = ox::add(b, ox::mul(b, f, c), ox::mul(b, i, gg));
    const std::string h2 = ox::mul(b, o, b.node("Tanh", {ox::layer_norm(b, *l.ln_c, c2, p + "ln_c_l" + n + ".")}));
    const std::string out = b.node("Identity", {h2});  // the scan output: a name of its own
    b.add_output(h2, ox::ElemType::f32, {ox::kBatch, Hd});
    b.add_output(c2, ox::ElemType::f32, {ox::kBatch, Hd});
    b.add_output(out, ox::ElemType::f32, {ox::kBatch, Hd});
    const std::string h_last = g.fresh("lstm_h"), c_last = g.fresh("lstm_c"), ys = g.fresh("lstm_y");
    g.add_node("Scan", {zeros, zeros, xg}, {h_last, c_last, ys},
               {ox::attr_graph("body", b), ox::attr_int("num_scan_inputs", 1), ox::attr_ints("scan_input_axes", {1}),
                ox::attr_ints("scan_output_axes", {1})});  // over axis 1 of xg; ys (B, L, Hd)
    seq = ys;
  }
  return seq;
}

std::string LSTM::export_onnx(onnx::Graph& g, const onnx::Sequence& in, const std::string& p) {
  namespace ox = onnx;
  if (opt.layer_norm) return export_layer_norm_lstm(g, *this, in, p);
  const int64_t Hd = hidden_size;
  std::vector<int64_t> iofc;  // rows of PyTorch's (i, f, g, o) blocks in ONNX's order (i, o, f, c = g)
  for (int64_t block : {0, 3, 1, 2})
    for (int64_t r = 0; r < Hd; r++) iofc.push_back(block * Hd + r);
  const std::string order = g.constant(iofc);
  auto gates = [&](const Var& w, const std::string& name) {  // (4Hd, ...) -> ONNX's order
    return g.node("Gather", {g.add_initializer(name, w.data()), order}, {ox::attr_int("axis", 0)});
  };
  std::string seq = ox::transpose(g, ox::apply_mask(g, in.x, in.mask), {1, 0, 2});  // (L, B, I): ONNX's layout 0
  for (size_t k = 0; k < layers.size(); k++) {
    const Layer& l = layers[k];
    const std::string n = std::to_string(k);
    std::string W = ox::unsqueeze(g, gates(l.w_ih, p + "weight_ih_l" + n), {0});  // (1, 4Hd, I)
    std::string R = ox::unsqueeze(g, gates(l.w_hh, p + "weight_hh_l" + n), {0});  // (1, 4Hd, Hd)
    std::string Bias = ox::unsqueeze(
        g, g.node("Concat", {gates(l.b_ih, p + "bias_ih_l" + n), gates(l.b_hh, p + "bias_hh_l" + n)}, {ox::attr_int("axis", 0)}),
        {0});  // (1, 8Hd)
    std::string Y = g.fresh("lstm_y");
    g.add_node("LSTM", {seq, W, R, Bias}, {Y}, {ox::attr_int("hidden_size", Hd)});  // (L, 1, B, Hd)
    seq = g.node("Squeeze", {Y, g.constant(std::vector<int64_t>{1})});              // (L, B, Hd)
  }
  return ox::transpose(g, seq, {1, 0, 2});  // (B, L, Hd)
}

// ---- FLOP count (nn/sequence_layer.h's convention) ----
// Per layer and position the two gate products x_t W_ih^T (I -> 4Hd; Hd -> 4Hd above the first layer) and
// h_{t-1} W_hh^T (Hd -> 4Hd); the cell (sigmoids, tanh, products with c) and the layer norms are elementwise.
double LSTM::forward_flops(int64_t batch, int64_t L) const {
  const double rows = (double)batch * L, Hd = hidden_size;
  double f = 0;
  for (size_t k = 0; k < layers.size(); k++)
    f += matmul_flops(rows, k == 0 ? input_size : Hd, 4 * Hd) + matmul_flops(rows, Hd, 4 * Hd);
  return f;
}

}  // namespace dl::nn
