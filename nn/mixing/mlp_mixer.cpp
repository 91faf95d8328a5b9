// nn/mixing/mlp_mixer.cpp - the MLP-Mixer block (math in nn/mixing/mlp_mixer.h).
#include "nn/mixing/mlp_mixer.h"

#include <algorithm>

#include "autograd/shape_ops.h"

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

}  // namespace dl::nn
