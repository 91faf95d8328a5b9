// nn/ssm/ssm_layer.cpp - the shared SSM layer shell (nn/ssm/ssm_layer.h).
#include "nn/ssm/ssm_layer.h"

#include <algorithm>

#include "nn/ssm/ssm_ops.h"
#include "nn/fused/glu.h"

namespace dl::nn {

SSMLayerOptions read_ssm_options(const LayerConfig& cfg, const std::string& layer, const std::vector<std::string>& keys,
                                 bool conjugate_pairs, int64_t max_state) {
  auto has = [&](const char* k) { return std::find(keys.begin(), keys.end(), k) != keys.end(); };
  SSMLayerOptions o;
  o.d_state = cfg_int(cfg, layer, "d_state", 64);
  if (conjugate_pairs && (o.d_state < 2 || o.d_state % 2))
    config_error(layer, "d_state", "must be even and >= 2", std::to_string(o.d_state));
  if (o.d_state < 1 || o.d_state > max_state)
    config_error(layer, "d_state", "must be in [1, " + std::to_string(max_state) + "]", std::to_string(o.d_state));
  if (has("dt_min")) {
    o.dt_min = cfg_float(cfg, layer, "dt_min", 1e-3);
    o.dt_max = cfg_float(cfg, layer, "dt_max", 1e-1);
    if (!(o.dt_min > 0 && o.dt_max >= o.dt_min))
      config_error(layer, "dt_min", "must satisfy 0 < dt_min <= dt_max",
                   std::to_string(o.dt_min) + " (dt_max " + std::to_string(o.dt_max) + ")");
  }
  if (has("bidirectional")) o.bidirectional = cfg_bool(cfg, layer, "bidirectional", false);
  o.dropout = cfg_dropout(cfg, layer);
  return o;
}

SSMLayer::SSMLayer(std::string name, int64_t d_model, bool bidir) : H(d_model), bidirectional(bidir), name_(std::move(name)) {}

void SSMLayer::add_output(double dropout, bool glu, Generator& g) {
  glu_ = glu;
  D = register_parameter("D", randn({H}, g));
  drop = register_module("dropout", std::make_shared<Dropout>(dropout, g));
  output_linear = register_module("output_linear", std::make_shared<Linear>(H, glu ? 2 * H : H, g));
}

Var SSMLayer::ssm(const Var& u) { return ssm_conv(u, kernel_forward(u.size(1)), D); }

Var SSMLayer::forward(const Var& x, const Tensor& mask) {
  check_sequence_input(name_, x, H);
  Var y = drop->forward(gelu(ssm(apply_mask(x, mask))));  // (B, L, H)
  y = output_linear->forward(y);                          // (B, L, 2H) or (B, L, H)
  return glu_ ? glu_fast(y) : y;                          // (B, L, H)
}

std::vector<std::string> SSMLayer::own_lr_parameters() const {
  std::vector<std::string> out;
  for (auto& n : kernel_ssm_parameters()) out.push_back("kernel." + n);
  return out;
}

Tensor SSMLayer::learned_kernel(int64_t L) {
  NoGradGuard ng;
  return kernel_forward(L).data().to(Device::cpu).to(DType::f32).contiguous();  // for plots and files: on the host
}

}  // namespace dl::nn
