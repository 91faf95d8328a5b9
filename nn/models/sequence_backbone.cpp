// nn/models/sequence_backbone.cpp - see sequence_backbone.h.
#include "nn/models/sequence_backbone.h"

#include "nn/attention/positions.h"
#include "nn/init.h"
#include "nn/onnx/ops.h"

namespace dl::nn {

MixerFactory registry_mixer(const std::string& layer, const BackboneOptions& shared, const LayerConfig& own) {
  const LayerEntry& e = find_layer(layer);  // an unknown name throws here, listing the known ones
  LayerConfig cfg = backbone_config(e, shared);
  if (!own.is_null()) cfg.update(own);
  return [&e, cfg](int64_t d_model, Generator& g) { return e.make(d_model, cfg, g); };
}

SequenceBackbone::SequenceBackbone(const SequenceBackboneOptions& o, const MixerFactory& make_mixer, Generator& g)
    : opt_(o) {
  const int64_t D = o.d_model;
  if (D <= 0 || o.layers < 0) fail("SequenceBackbone: d_model must be positive and layers >= 0");
  if (o.vocab > 0) embed_ = register_module("embed", std::make_shared<Embedding>(o.vocab, D, g));
  else if (o.features > 0) in_proj_ = register_module("in_proj", std::make_shared<Linear>(o.features, D, g));
  else fail("SequenceBackbone: give a vocabulary (token input) or a feature count (continuous input)");
  if (o.positions != "none" && o.max_len <= 0) fail("SequenceBackbone: positions \"" + o.positions + "\" need max_len > 0");
  if (o.positions == "learned") pos_ = register_parameter("pos", init::normal({o.max_len, D}, 0.02, g));
  else if (o.positions == "sinusoidal") sinusoid_ = sinusoidal_table(o.max_len, D);
  else if (o.positions != "none")
    fail("SequenceBackbone: positions must be \"none\", \"learned\" or \"sinusoidal\", found \"" + o.positions + "\"");
  blocks_ = register_module("blocks", std::make_shared<ModuleList<ResidualBlock>>());
  for (int i = 0; i < o.layers; i++) {
    auto mixer = make_mixer(D, g);  // built first: the draws go mixer, then its block's feed-forward
    blocks_->push_back(std::make_shared<ResidualBlock>(mixer, D, o.block, g));
  }
  final_norm_ = register_module("final_norm", make_sequence_norm(o.final_norm, D));
  if (o.input_dropout) drop_ = register_module("drop", std::make_shared<Dropout>(o.block.dropout, g));
}

Device SequenceBackbone::device() const {
  return embed_ ? embed_->weight.data().device() : in_proj_->weight.data().device();
}

Var SequenceBackbone::encode(const Tensor& input, const Tensor& mask) {
  // token ids are moved to the device by the embedding; features follow the model here
  Var x = embed_ ? embed_->forward(input) : in_proj_->forward(Var(input.to(device())));  // (B, L, D)
  const int64_t L = x.size(1);
  if (L > opt_.max_len && (pos_.defined() || sinusoid_.defined()))
    fail("SequenceBackbone: sequence of length " + std::to_string(L) + " is longer than the positions table (" +
         std::to_string(opt_.max_len) + ")");
  if (pos_.defined()) x = x + narrow(pos_, 0, 0, L);
  if (sinusoid_.defined()) x = x + Var(sinusoid_.narrow(0, 0, L).to(device()));
  if (drop_) x = drop_->forward(x);
  for (auto& b : blocks_->items()) x = b->forward(x, mask);
  return apply_sequence_norm(*final_norm_, x);
}

double SequenceBackbone::forward_flops(int64_t batch, int64_t L) const {
  double f = in_proj_ ? matmul_flops((double)batch * L, in_proj_->in_features, in_proj_->out_features) : 0.0;
  for (auto& b : blocks_->items()) f += b->forward_flops(batch, L);
  return f;
}

StreamState SequenceBackbone::start_stream(int64_t batch) const {
  StreamState s;
  for (size_t i = 0; i < blocks_->size(); i++) {
    const ResidualBlock& b = (*blocks_)[i];
    if (!b.is_causal())
      fail("SequenceBackbone: block " + std::to_string(i) + " (" + b.mixer().type_name() +
           ", norm " + b.opt.norm + ") looks at later positions, so the model cannot run one position at a time");
    s.children.push_back(b.start_stream(batch));
  }
  if (opt_.final_norm != "layer") fail("SequenceBackbone: a " + opt_.final_norm + " final norm mixes positions: no stream");
  return s;
}

Var SequenceBackbone::step(const Tensor& input, StreamState& s) {
  if (s.children.size() != blocks_->size()) fail("SequenceBackbone: the stream state does not come from start_stream");
  if (s.pos >= opt_.max_len && (pos_.defined() || sinusoid_.defined()))
    fail("SequenceBackbone: position " + std::to_string(s.pos) + " is past the positions table (" +
         std::to_string(opt_.max_len) + ")");
  Var x = embed_ ? embed_->forward(input) : in_proj_->forward(Var(input.to(device())));  // (B, D)
  if (x.dim() != 2) fail("SequenceBackbone: step takes one position per sequence, found input " + shape_str(input.shape()));
  if (pos_.defined()) x = x + select(pos_, 0, s.pos);
  if (sinusoid_.defined()) x = x + Var(sinusoid_.select(0, s.pos).to(device()));
  if (drop_) x = drop_->forward(x);
  for (size_t i = 0; i < blocks_->size(); i++) x = (*blocks_)[i].step(x, s.children[i]);
  s.pos++;
  return apply_sequence_norm_step(*final_norm_, x);
}

Var SequenceBackbone::pool(const Var& h, const Tensor& mask, const std::string& how) {
  const int64_t B = h.size(0), L = h.size(1);
  const Device dev = h.data().device();
  Tensor m = mask.defined() ? mask.to(dev) : ones({B, L}, DType::f32, dev);
  if (how == "last") {  // the last real position of each sequence (found on the host)
    Tensor mc = m.to(Device::cpu).to(DType::f32).contiguous();
    const float* pm = mc.data<float>();
    std::vector<int64_t> idx(B);
    for (int64_t b = 0; b < B; b++) {
      int64_t last = 0;
      for (int64_t l = 0; l < L; l++)
        if (pm[b * L + l] != 0) last = l;
      idx[b] = b * L + last;
    }
    return index_select(reshape(h, {B * L, h.size(2)}), 0, from_vector(idx, {B}));
  }
  if (how != "mean") fail("SequenceBackbone::pool: how must be \"mean\" or \"last\", found \"" + how + "\"");
  // masked mean: sum_l m[b,l] h[b,l,:] / sum_l m[b,l] (a row with no real position divides by 1)
  Tensor count = clamp(sum(m, {1}, true), 1.0, 1e30);         // (B, 1)
  return div(sum(mul(h, Var(m.unsqueeze(2))), {1}), Var(count));  // (B, D)
}

// ---- ONNX export (docs/onnx.md) ----
std::string SequenceBackbone::export_encode(onnx::Graph& g, const std::string& input, const std::string& mask, int64_t L,
                                            const std::string& p) {
  namespace ox = onnx;
  if (L > opt_.max_len && (pos_.defined() || sinusoid_.defined()))
    fail("SequenceBackbone export: length " + std::to_string(L) + " is longer than the positions table (" +
         std::to_string(opt_.max_len) + ")");
  std::string x = embed_ ? g.node("Gather", {g.add_initializer(p + "embed.weight", embed_->weight.data()), input})
                         : ox::linear(g, *in_proj_, input, p + "in_proj.");  // (B, L, D)
  if (pos_.defined())
    x = ox::add(g, x,
                g.node("Slice", {g.add_initializer(p + "pos", pos_.data()), g.constant(std::vector<int64_t>{0}),
                                 g.constant(std::vector<int64_t>{L}), g.constant(std::vector<int64_t>{0})}));
  if (sinusoid_.defined()) x = ox::add(g, x, g.constant(sinusoid_.narrow(0, 0, L), p + "sinusoid"));
  for (size_t i = 0; i < blocks_->size(); i++)
    x = (*blocks_)[i].export_onnx(g, {x, mask, L, opt_.d_model}, p + "blocks." + std::to_string(i) + ".");
  return ox::sequence_norm(g, *final_norm_, x, p + "final_norm.");
}

std::string SequenceBackbone::export_pool(onnx::Graph& g, const std::string& h, const std::string& mask, int64_t L,
                                          const std::string& how) {
  namespace ox = onnx;
  auto sum_l = [&](const std::string& v, int64_t keep) {
    return g.node("ReduceSum", {v, g.constant(std::vector<int64_t>{1})}, {ox::attr_int("keepdims", keep)});
  };
  if (how == "last") {
    if (mask.empty())  // a scalar index drops the L dimension
      return g.node("Gather", {h, g.constant(from_vector(std::vector<int64_t>{L - 1}, {}), "last")}, {ox::attr_int("axis", 1)});
    // the last real position: argmax over l of mask[b, l] * (l + 1) (0 when a row has none, as pool())
    std::vector<float> pos1(L);
    for (int64_t l = 0; l < L; l++) pos1[l] = float(l + 1);
    std::string idx = g.node("ArgMax", {ox::mul(g, mask, g.constant(from_vector(pos1, {L}), "positions"))},
                             {ox::attr_int("axis", 1), ox::attr_int("keepdims", 1)});  // (B, 1) int64
    std::string onehot = g.node("Cast", {g.node("Equal", {g.constant(arange(L), "arange"), idx})},
                                {ox::attr_int("to", int64_t(ox::ElemType::f32))});  // (B, L)
    return sum_l(ox::mul(g, h, ox::unsqueeze(g, onehot, {2})), 0);                  // (B, D)
  }
  if (how != "mean") fail("SequenceBackbone::export_pool: how must be \"mean\" or \"last\", found \"" + how + "\"");
  if (mask.empty()) return g.node("ReduceMean", {h}, {ox::attr_ints("axes", {1}), ox::attr_int("keepdims", 0)});
  // sum_l m h / max(sum_l m, 1)
  std::string count = g.node("Max", {sum_l(mask, 1), g.constant(1.0f)});  // (B, 1)
  return g.node("Div", {sum_l(ox::mul(g, h, ox::unsqueeze(g, mask, {2})), 0), count});
}

}  // namespace dl::nn
