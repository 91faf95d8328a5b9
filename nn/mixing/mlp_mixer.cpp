// nn/mixing/mlp_mixer.cpp - the MLP-Mixer block (math in nn/mixing/mlp_mixer.h).
#include "nn/mixing/mlp_mixer.h"

#include <algorithm>

#include "autograd/shape_ops.h"
#include "nn/onnx/ops.h"

namespace dl::nn {

MixerBlock::MixerBlock(int64_t L, int64_t d, int64_t tok, int64_t ch, Generator& g) : seq_len(L) {
  norm1 = register_module("norm1", std::make_shared<LayerNorm>(d));
  mlp_tokens = register_module("mlp_tokens", std::make_shared<Mlp>(L, tok, L, g));
  norm2 = register_module("norm2", std::make_shared<LayerNorm>(d));
  mlp_channels = register_module("mlp_channels", std::make_shared<Mlp>(d, ch, d, g));
}

std::shared_ptr<MixerBlock> MixerBlock::from_config(int64_t d, const LayerConfig& c, Generator& g) {
  check_config_keys(c, "mixer", config_keys());
  int64_t L = cfg_int(c, "mixer", "max_len", 0);
  if (L <= 0) fail("layer mixer: config field 'max_len' (the padded sequence length token mixing runs over) is required");
  return std::make_shared<MixerBlock>(L, d, cfg_int(c, "mixer", "token_hidden", std::max<int64_t>(1, L / 2)),
                                      cfg_int(c, "mixer", "channel_hidden", 4 * d), g);
}

Var MixerBlock::forward(const Var& x0, const Tensor& mask) {
  if (x0.dim() != 3 || x0.size(1) > seq_len)
    fail("MixerBlock: expected (B, T, C) with T <= seq_len = " + std::to_string(seq_len) + ", found " + shape_str(x0.shape()));
  const int64_t B = x0.size(0), T = x0.size(1);
  Var x = T < seq_len ? pad(x0, {0, 0, 0, seq_len - T}) : x0;  // (B, L, C)
  Var n = norm1->forward(x);
  Tensor keep = ones({B, seq_len}, x.dtype());  // real positions
  if (mask.defined()) {
    if (mask.shape() != Shape{B, T})
      fail("MixerBlock: mask shape mismatch: expected (B, T) = " + shape_str({B, T}) + ", found " + shape_str(mask.shape()));
    keep.narrow(1, 0, T).copy_(mask.to(x.dtype()));
  }
  if (T < seq_len) keep.narrow(1, T, seq_len - T).zero_();
  if (mask.defined() || T < seq_len) n = n * Var(keep.reshape({B, seq_len, 1}));
  x = x + transpose(mlp_tokens->forward(transpose(n, 1, 2)), 1, 2);  // mixes along L
  x = x + mlp_channels->forward(norm2->forward(x));
  return T < seq_len ? narrow(x, 1, 0, T) : x;
}

std::string MixerBlock::export_onnx(onnx::Graph& g, const onnx::Sequence& in, const std::string& p) {
  namespace ox = onnx;
  if (in.length != seq_len)
    fail("layer 'MixerBlock' (" + p + "): exports for its own length seq_len = " + std::to_string(seq_len) + " only, asked " +
         std::to_string(in.length));
  auto mlp = [&](const Mlp& m, const std::string& v, const std::string& name) {
    return ox::linear(g, *m.fc2, ox::gelu(g, ox::linear(g, *m.fc1, v, p + name + ".fc1.")), p + name + ".fc2.");
  };
  std::string n = ox::apply_mask(g, ox::layer_norm(g, *norm1, in.x, p + "norm1."), in.mask);  // (B, L, C), padding zeroed
  std::string x = ox::add(g, in.x, ox::transpose(g, mlp(*mlp_tokens, ox::transpose(g, n, {0, 2, 1}), "mlp_tokens"), {0, 2, 1}));
  return ox::add(g, x, mlp(*mlp_channels, ox::layer_norm(g, *norm2, x, p + "norm2."), "mlp_channels"));
}

// ---- FLOP count (nn/sequence_layer.h's convention) ----
// forward() pads to seq_len, so the count is that of seq_len positions whatever L <= seq_len is: the token MLP on each
// of the B C columns (seq_len -> token_hidden -> seq_len) and the channel MLP on each of the B seq_len rows.
double MixerBlock::forward_flops(int64_t batch, int64_t L) const {
  if (L > seq_len) fail("MixerBlock: forward_flops for L = " + std::to_string(L) + " > seq_len = " + std::to_string(seq_len));
  const double C = mlp_channels->fc1->in_features, tok = mlp_tokens->fc1->out_features, ch = mlp_channels->fc1->out_features;
  const double columns = (double)batch * C, rows = (double)batch * seq_len;
  return matmul_flops(columns, seq_len, tok) + matmul_flops(columns, tok, seq_len) + matmul_flops(rows, C, ch) +
         matmul_flops(rows, ch, C);
}

}  // namespace dl::nn
