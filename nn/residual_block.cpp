// nn/residual_block.cpp - the residual block (nn/residual_block.h).
#include "nn/residual_block.h"

#include "nn/onnx/ops.h"

namespace dl::nn {

std::shared_ptr<Module> make_sequence_norm(const std::string& kind, int64_t d) {
  if (kind == "layer") return std::make_shared<LayerNorm>(d);
  if (kind == "batch") return std::make_shared<BatchNorm1d>(d);
  fail("sequence norm must be \"layer\" or \"batch\", found \"" + kind + "\"");
}

Var apply_sequence_norm(Module& norm, const Var& x) {
  if (auto* ln = dynamic_cast<LayerNorm*>(&norm)) return ln->forward(x);
  if (auto* bn = dynamic_cast<BatchNorm1d*>(&norm)) return transpose(bn->forward(transpose(x, 1, 2)), 1, 2);  // (B, H, L)
  fail("apply_sequence_norm: " + norm.type_name() + " is not a norm made by make_sequence_norm");
}

Var apply_sequence_norm_step(Module& norm, const Var& x) {
  return reshape(apply_sequence_norm(norm, unsqueeze(x, 1)), {x.size(0), x.size(1)});
}

ResidualBlock::ResidualBlock(std::shared_ptr<SequenceLayer> mixer, int64_t d, const ResidualBlockOptions& o, Generator& g)
    : opt(o) {
  mixer_ = register_module("mixer", std::move(mixer));
  norm1_ = register_module("norm1", make_sequence_norm(o.norm, d));
  if (o.ffn_hidden > 0 && mixer_->wants_feed_forward()) {
    norm2_ = register_module("norm2", make_sequence_norm(o.norm, d));
    ffn_ = register_module("ffn", std::make_shared<FeedForward>(d, o.ffn_hidden, o.dropout, g));
  }
  drop_ = register_module("drop", std::make_shared<Dropout>(o.dropout, g));
}

std::string ResidualBlock::extra_repr() const {
  return opt.norm + (opt.prenorm ? ", prenorm" : ", postnorm") + (ffn_ ? ", ffn " + std::to_string(opt.ffn_hidden) : "");
}

Var ResidualBlock::forward(const Var& x0, const Tensor& mask) {
  Var x = x0;
  if (opt.prenorm) {
    x = x + drop_->forward(mixer_->forward(apply_sequence_norm(*norm1_, x), mask));
    if (ffn_) x = x + drop_->forward(ffn_->forward(apply_sequence_norm(*norm2_, x)));
  } else {
    x = apply_sequence_norm(*norm1_, x + drop_->forward(mixer_->forward(x, mask)));
    if (ffn_) x = apply_sequence_norm(*norm2_, x + drop_->forward(ffn_->forward(x)));
  }
  return x;
}

StreamState ResidualBlock::start_stream(int64_t batch) const {
  StreamState s = SequenceLayer::start_stream(batch);  // refuses a batch-norm block or a mixer that looks ahead
  s.children.push_back(mixer_->start_stream(batch));
  return s;
}

Var ResidualBlock::step(const Var& x, StreamState& s) {
  if (s.children.size() != 1) fail("ResidualBlock: the stream state does not come from start_stream");
  // the norms and the feed-forward act per position: the mixer takes one step on (B, H)
  auto ffn = [&](const Var& v) { return reshape(ffn_->forward(unsqueeze(v, 1)), {v.size(0), v.size(1)}); };
  Var y = x;
  StreamState& m = s.children[0];
  if (opt.prenorm) {
    y = y + drop_->forward(mixer_->step(apply_sequence_norm_step(*norm1_, y), m));
    if (ffn_) y = y + drop_->forward(ffn(apply_sequence_norm_step(*norm2_, y)));
  } else {
    y = apply_sequence_norm_step(*norm1_, y + drop_->forward(mixer_->step(y, m)));
    if (ffn_) y = apply_sequence_norm_step(*norm2_, y + drop_->forward(ffn(y)));
  }
  s.pos++;
  return y;
}

std::string ResidualBlock::export_onnx(onnx::Graph& g, const onnx::Sequence& in, const std::string& p) {
  namespace ox = onnx;
  auto mixer = [&](const std::string& v) {
    onnx::Sequence s = in;
    s.x = v;
    return mixer_->export_onnx(g, s, p + "mixer.");
  };
  auto ffn = [&](const std::string& v) { return ox::feed_forward(g, *ffn_, v, p + "ffn."); };
  auto norm1 = [&](const std::string& v) { return ox::sequence_norm(g, *norm1_, v, p + "norm1."); };
  auto norm2 = [&](const std::string& v) { return ox::sequence_norm(g, *norm2_, v, p + "norm2."); };
  std::string x = in.x;  // (B, L, H)
  if (opt.prenorm) {
    x = ox::add(g, x, mixer(norm1(x)));
    if (ffn_) x = ox::add(g, x, ffn(norm2(x)));
  } else {
    x = norm1(ox::add(g, x, mixer(x)));
    if (ffn_) x = norm2(ox::add(g, x, ffn(x)));
  }
  return x;
}

// ---- FLOP count (nn/sequence_layer.h's convention): the mixer's own, and the feed-forward's fc1 and fc2 ----
double ResidualBlock::forward_flops(int64_t batch, int64_t L) const {
  const double rows = (double)batch * L;
  double f = mixer_->forward_flops(batch, L);
  if (ffn_)
    f += matmul_flops(rows, ffn_->fc1->in_features, ffn_->fc1->out_features) +
         matmul_flops(rows, ffn_->fc2->in_features, ffn_->fc2->out_features);
  return f;
}

}  // namespace dl::nn
