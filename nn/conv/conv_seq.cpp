// nn/conv/conv_seq.cpp - lightweight, dynamic and dilated separable convolutions and the GLU block (nn/conv/conv_seq.h).
#include "nn/conv/conv_seq.h"

#include <cmath>

#include "autograd/conv.h"
#include "nn/init.h"
#include "autograd/linalg.h"
#include "autograd/shape_ops.h"
#include "nn/fused/glu.h"
#include "nn/onnx/ops.h"

namespace dl::nn {

// left padding: everything before t for a causal layer, half the receptive field otherwise
static int64_t left_pad(const ConvSeqOptions& o, int64_t dilation = 1) {
  return o.causal ? (o.kernel_size - 1) * dilation : (o.kernel_size - 1) * dilation / 2;
}

LightweightConv::LightweightConv(int64_t C_, const ConvSeqOptions& o, Generator& g) : C(C_), opt(o), gen(&g) {
  weight = register_parameter("weight", init::xavier_uniform({o.num_heads, 1, o.kernel_size}, g));
}

Var LightweightConv::forward(const Var& x) {
  const int64_t K = opt.kernel_size, H = opt.num_heads, pl = left_pad(opt);
  Var w = softmax(reshape(weight, {H, K}), 1);              // (H, K), each row sums to 1
  w = dropout(w, opt.weight_dropout, is_training(), *gen);  // DropConnect on the kernel
  w = reshape(repeat_interleave(w, C / H, 0), {C, 1, K});   // (C, 1, K): head h(c) = c / (C/H)
  Var xt = transpose(x, 1, 2);                              // (B, C, L)
  Conv1dParams p;
  p.pad_left = pl, p.pad_right = K - 1 - pl, p.groups = C;
  return transpose(conv1d(xt, w, Var(), p), 1, 2);  // (B, L, C)
}

DynamicConv::DynamicConv(int64_t C_, const ConvSeqOptions& o, Generator& g) : C(C_), opt(o), gen(&g) {
  weight_linear = register_module("weight_linear", std::make_shared<Linear>(C, o.num_heads * o.kernel_size, g));
}

Var DynamicConv::forward(const Var& x) {
  const int64_t B = x.size(0), L = x.size(1), K = opt.kernel_size, H = opt.num_heads, pl = left_pad(opt);
  Var w = reshape(weight_linear->forward(x), {B, L, H, K});  // a kernel per position
  w = softmax(w, 3);
  if (record_kernels) record_kernels->push_back(w);
  w = dropout(w, opt.weight_dropout, is_training(), *gen);
  w = repeat_interleave(w, C / H, 2);                  // (B, L, C, K)
  Var xp = pad(transpose(x, 1, 2), {pl, K - 1 - pl});  // (B, C, L + K - 1)
  xp = transpose(xp, 1, 2);                            // (B, L + K - 1, C)
  Var y;
  for (int64_t k = 0; k < K; k++) {  // y[t] += w[t, k] x[t + k - pl]
    Var term = narrow(xp, 1, k, L) * select(w, 3, k);
    y = k == 0 ? term : y + term;
  }
  return y;  // (B, L, C)
}

DilatedSeparableConv::DilatedSeparableConv(int64_t C_, const ConvSeqOptions& o, Generator& g) : C(C_), opt(o) {
  const double a = 1.0 / std::sqrt((double)o.kernel_size);  // torch Conv1d default: fan_in = (C/groups) K = K
  depthwise_weight = register_parameter("depthwise.weight", uniform({C, 1, o.kernel_size}, -a, a, g));
  depthwise_bias = register_parameter("depthwise.bias", uniform({C}, -a, a, g));
  pointwise = register_module("pointwise", std::make_shared<Linear>(C, C, g));
}

Var DilatedSeparableConv::forward(const Var& x) {
  const int64_t K = opt.kernel_size, d = opt.dilation, pl = left_pad(opt, d);
  Conv1dParams p;
  p.pad_left = pl, p.pad_right = (K - 1) * d - pl, p.dilation = d, p.groups = C;
  Var y = conv1d(transpose(x, 1, 2), depthwise_weight, depthwise_bias, p);  // (B, C, L)
  return pointwise->forward(transpose(y, 1, 2));                            // (B, L, C)
}

// ---- what an inspection tool may ask (nn/inspect.h): the taps, in the form y[t] = sum_k w[k] x[t + offsets[k]] ----
static ConvTaps describe(const std::string& kind, const ConvSeqOptions& o, int64_t dilation, const std::string& row,
                         const std::string& meaning) {
  ConvTaps t;
  t.kind = kind, t.kernel_size = o.kernel_size, t.dilation = dilation, t.causal = o.causal;
  t.offsets = conv_tap_offsets(o.kernel_size, dilation, o.causal);
  t.row = row, t.meaning = meaning;
  return t;
}

ConvTaps LightweightConv::conv_taps() const {
  ConvTaps t = describe("lightweight", opt, 1, "head", "softmax kernel weight (sums to 1 per head)");
  t.taps = softmax(weight.data().reshape({opt.num_heads, opt.kernel_size}).to(Device::cpu), 1);  // (H, K)
  return t;
}

ConvTaps DynamicConv::conv_taps() const {  // predicted at every position: recorded by forward (record_kernels)
  return describe("dynamic", opt, 1, "head", "kernel weight (each position's kernel sums to 1)");
}

ConvTaps DilatedSeparableConv::conv_taps() const {
  ConvTaps t = describe("dilated", opt, opt.dilation, "channel", "depthwise tap (raw; a bias and the pointwise mix follow)");
  t.taps = depthwise_weight.data().reshape({C, opt.kernel_size}).to(Device::cpu).to(DType::f32).contiguous();  // (C, K)
  return t;
}

GLUConvBlock::GLUConvBlock(const std::string& k, int64_t d_model, const ConvSeqOptions& o, Generator& g)
    : kind(k), opt(o), C(d_model) {
  input_linear = register_module("input_linear", std::make_shared<Linear>(C, 2 * C, g));
  if (kind == "lightconv") conv = register_module("conv", std::make_shared<LightweightConv>(C, o, g));
  else if (kind == "dynamicconv") conv = register_module("conv", std::make_shared<DynamicConv>(C, o, g));
  else if (kind == "dilatedconv") conv = register_module("conv", std::make_shared<DilatedSeparableConv>(C, o, g));
  else fail("GLUConvBlock: kind must be lightconv, dynamicconv or dilatedconv, found \"" + kind + "\"");
  output_linear = register_module("output_linear", std::make_shared<Linear>(C, C, g));
  drop = register_module("dropout", std::make_shared<Dropout>(o.dropout, g));
}

std::vector<std::string> GLUConvBlock::config_keys(const std::string& kind) {
  std::vector<std::string> keys = {"kernel_size", "causal", "dropout"};
  if (kind == "dilatedconv") keys.push_back("dilation");
  else keys.insert(keys.end(), {"num_heads", "weight_dropout"});
  return keys;
}

std::shared_ptr<GLUConvBlock> GLUConvBlock::from_config(const std::string& kind, int64_t d_model, const LayerConfig& cfg,
                                                        Generator& g) {
  check_config_keys(cfg, kind, config_keys(kind));
  ConvSeqOptions o;
  o.kernel_size = cfg_int(cfg, kind, "kernel_size", 7);
  o.causal = cfg_bool(cfg, kind, "causal", false);
  if (o.kernel_size < 1 || (!o.causal && o.kernel_size % 2 == 0))
    config_error(kind, "kernel_size", o.causal ? "must be >= 1" : "must be odd and >= 1 for a non-causal convolution",
                 std::to_string(o.kernel_size));
  o.num_heads = cfg_int(cfg, kind, "num_heads", 1);
  if (o.num_heads < 1 || d_model % o.num_heads)
    config_error(kind, "num_heads", "must divide d_model = " + std::to_string(d_model), std::to_string(o.num_heads));
  o.dilation = cfg_int(cfg, kind, "dilation", 1);
  if (o.dilation < 1) config_error(kind, "dilation", "must be >= 1", std::to_string(o.dilation));
  o.weight_dropout = cfg_dropout(cfg, kind, "weight_dropout");
  o.dropout = cfg_dropout(cfg, kind);
  return std::make_shared<GLUConvBlock>(kind, d_model, o, g);
}

Var GLUConvBlock::forward(const Var& x, const Tensor& mask) {
  check_sequence_input(kind, x, C);
  Var h = glu_fast(input_linear->forward(x));  // (B, L, 2C) -> (B, L, C)
  h = apply_mask(h, mask);                     // padding stays zero through the convolution
  h = conv->forward(h);                        // (B, L, C)
  return drop->forward(output_linear->forward(h));
}

StreamState GLUConvBlock::start_stream(int64_t batch) const {
  StreamState s = SequenceLayer::start_stream(batch);  // refuses a layer that is not causal
  const int64_t R = (opt.kernel_size - 1) * (kind == "dilatedconv" ? opt.dilation : 1) + 1;
  s.t = {zeros({batch, R, C}, input_linear->weight.dtype(), input_linear->weight.data().device())};
  return s;
}

Var GLUConvBlock::step(const Var& x, StreamState& s) {
  const int64_t B = x.size(0);
  check_step_input(type_name(), x, C);
  check_stream_state(type_name(), s, 1, B);
  const int64_t R = s.t[0].size(1);
  Var h = unsqueeze(glu_fast(input_linear->forward(x)), 1);               // (B, 1, C)
  Var window = cat({narrow(Var(s.t[0]), 1, 1, R - 1), h}, 1);             // (B, R, C): the oldest out, h in
  s.t = {window.data().contiguous()};
  s.pos++;
  Var y = reshape(narrow(conv->forward(window), 1, R - 1, 1), {B, C});  // the window's last position
  return drop->forward(output_linear->forward(y));
}

// ---- ONNX export (docs/onnx.md) ----
// (H, K) per-head kernels -> (C, K): head h(c) = c / (C/H), as repeat_interleave
static std::string per_channel(onnx::Graph& g, const std::string& w, int64_t C, int64_t H, int64_t axis) {
  std::vector<int64_t> head(C);
  for (int64_t c = 0; c < C; c++) head[c] = c / (C / H);
  return g.node("Gather", {w, g.constant(head)}, {onnx::attr_int("axis", axis)});
}

std::string LightweightConv::export_onnx(onnx::Graph& g, const std::string& x, int64_t L, const std::string& p) {
  namespace ox = onnx;
  const int64_t K = opt.kernel_size, H = opt.num_heads, pl = left_pad(opt);
  std::string w = g.node("Softmax", {ox::reshape(g, g.add_initializer(p + "weight", weight.data()), {H, K})},
                         {ox::attr_int("axis", 1)});      // (H, K)
  w = ox::unsqueeze(g, per_channel(g, w, C, H, 0), {1});  // (C, 1, K)
  std::string y = g.node("Conv", {ox::transpose(g, x, {0, 2, 1}), w},
                         {ox::attr_int("group", C), ox::attr_ints("kernel_shape", {K}), ox::attr_ints("pads", {pl, K - 1 - pl})});
  return ox::transpose(g, y, {0, 2, 1});  // (B, L, C)
}

std::string DynamicConv::export_onnx(onnx::Graph& g, const std::string& x, int64_t L, const std::string& p) {
  namespace ox = onnx;
  const int64_t K = opt.kernel_size, H = opt.num_heads, pl = left_pad(opt);
  std::string w = ox::reshape(g, ox::linear(g, *weight_linear, x, p + "weight_linear."), {0, L, H, K});
  w = per_channel(g, g.node("Softmax", {w}, {ox::attr_int("axis", 3)}), C, H, 2);                     // (B, L, C, K)
  std::string xp = g.node("Pad", {x, g.constant(std::vector<int64_t>{0, pl, 0, 0, K - 1 - pl, 0})});  // (B, L + K - 1, C)
  std::string y;
  for (int64_t k = 0; k < K; k++) {  // y[t] += w[t, k] x[t + k - pl]
    std::string xk = g.node("Slice", {xp, g.constant(std::vector<int64_t>{k}), g.constant(std::vector<int64_t>{k + L}),
                                      g.constant(std::vector<int64_t>{1})});
    std::string tap = g.constant(from_vector(std::vector<int64_t>{k}, {}), "tap");
    std::string wk = g.node("Gather", {w, tap}, {ox::attr_int("axis", 3)});  // (B, L, C)
    std::string term = ox::mul(g, xk, wk);
    y = k == 0 ? term : ox::add(g, y, term);
  }
  return y;  // (B, L, C)
}

std::string DilatedSeparableConv::export_onnx(onnx::Graph& g, const std::string& x, int64_t L, const std::string& p) {
  namespace ox = onnx;
  const int64_t K = opt.kernel_size, d = opt.dilation, pl = left_pad(opt, d);
  std::string y = g.node("Conv",
                         {ox::transpose(g, x, {0, 2, 1}), g.add_initializer(p + "depthwise.weight", depthwise_weight.data()),
                          g.add_initializer(p + "depthwise.bias", depthwise_bias.data())},
                         {ox::attr_int("group", C), ox::attr_ints("kernel_shape", {K}), ox::attr_ints("dilations", {d}),
                          ox::attr_ints("pads", {pl, (K - 1) * d - pl})});  // (B, C, L)
  return ox::linear(g, *pointwise, ox::transpose(g, y, {0, 2, 1}), p + "pointwise.");
}

std::string GLUConvBlock::export_onnx(onnx::Graph& g, const onnx::Sequence& in, const std::string& p) {
  namespace ox = onnx;
  std::string h = ox::glu(g, ox::linear(g, *input_linear, in.x, p + "input_linear."));  // (B, L, C)
  h = conv->export_onnx(g, ox::apply_mask(g, h, in.mask), in.length, p + "conv.");
  return ox::linear(g, *output_linear, h, p + "output_linear.");
}

// ---- FLOP count (nn/sequence_layer.h's convention) ----
// input_linear (C -> 2C) and output_linear (C -> C), then K taps per position and channel; the dynamic convolution
// also predicts its kernel (weight_linear, C -> H K), the dilated one adds its pointwise Linear (C -> C). The softmax
// over the taps, the GLU and the bias are elementwise and not counted.
double GLUConvBlock::forward_flops(int64_t batch, int64_t L) const {
  const double rows = (double)batch * L, K = opt.kernel_size;
  double f = matmul_flops(rows, C, 2 * C) + matmul_flops(rows, C, C) + 2 * rows * C * K;
  if (kind == "dynamicconv") f += matmul_flops(rows, C, opt.num_heads * K);
  if (kind == "dilatedconv") f += matmul_flops(rows, C, C);
  return f;
}

}  // namespace dl::nn
