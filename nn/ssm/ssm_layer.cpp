// nn/ssm/ssm_layer.cpp - the shared SSM layer shell (nn/ssm/ssm_layer.h).
#include "nn/ssm/ssm_layer.h"

#include <algorithm>
#include <cmath>

#include "nn/ssm/ssm_ops.h"
#include "nn/fused/glu.h"
#include "nn/onnx/ops.h"

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

SSMKernel SSMLayer::ssm_kernel(int64_t L) {
  SSMKernel k;
  k.K = learned_kernel(L);
  for (auto& [n, p] : named_parameters()) {
    const Tensor v = p.data().to(Device::cpu).to(DType::f64).contiguous();
    const double* x = v.data<double>();
    if (n == "kernel.log_dt") {
      for (int64_t i = 0; i < v.numel(); i++) k.dt.push_back(std::exp(x[i]));
      k.dt_source = "exp(kernel.log_dt), one per channel", k.dt_per_channel = true;
    } else if (n == "kernel.Lambda_log_neg_re") {
      for (int64_t i = 0; i < v.numel(); i++) k.dt.push_back(2 * x[i] * x[i]);
      k.dt_source = "2 x^2 from kernel.Lambda_log_neg_re (Re Lambda = -x^2 = -dt/2), one per mode";
    }
  }
  return k;
}

bool SSMLayer::streams_in_constant_memory() const { return is_causal() && has_diagonal_recurrence(); }

// state.t: x's real and imaginary parts (B, H, N); state.host: the DiagonalRecurrence
StreamState SSMLayer::start_stream(int64_t batch) const {
  StreamState s = SequenceLayer::start_stream(batch);  // refuses a bidirectional layer
  if (!streams_in_constant_memory()) return s;
  auto r = std::make_shared<const DiagonalRecurrence>(diagonal_recurrence());
  s.t = {zeros({batch, H, r->N}, DType::f64), zeros({batch, H, r->N}, DType::f64)};
  s.host = r;
  return s;
}

void SSMLayer::check_step(const Var& x, const StreamState& s, size_t state_tensors) const {
  check_step_input(name_, x, H);
  check_stream_state(name_, s, state_tensors, x.size(0));
}

Var SSMLayer::finish_step(const Tensor& y, const Var& x) {
  const int64_t Bn = x.size(0);
  Var z = drop->forward(gelu(Var(y.reshape({Bn, 1, H}).to(x.data().dtype()).to(x.data().device()))));  // as forward()
  z = output_linear->forward(z);
  return reshape(glu_ ? glu_fast(z) : z, {Bn, H});
}

Var SSMLayer::step(const Var& x, StreamState& s) {
  if (!streams_in_constant_memory()) return SequenceLayer::step(x, s);
  check_step(x, s, 2);
  if (!s.host) fail("layer " + name_ + ": the stream state does not come from start_stream");
  const auto& r = *static_cast<const DiagonalRecurrence*>(s.host.get());
  const int64_t Bn = x.size(0), N = r.N;
  const std::vector<double> u = to_doubles(x.data()), Dv = to_doubles(D.data());
  Tensor y = Tensor::empty({Bn, H}, DType::f64);
  double *xr = s.t[0].data<double>(), *xi = s.t[1].data<double>();
  for (int64_t b = 0; b < Bn; b++)
    for (int64_t h = 0; h < H; h++) {
      const double ut = u[b * H + h];
      double acc = 0;
      for (int64_t n = 0; n < N; n++) {
        const int64_t i = h * N + n, k = (b * H + h) * N + n;
        const std::complex<double> xk = r.dA[i] * std::complex<double>(xr[k], xi[k]) + r.dB[i] * ut;  // x_k = dA x_{k-1} + dB u_k
        xr[k] = xk.real(), xi[k] = xk.imag();
        acc += (r.C[i] * xk).real();  // Re(C x_k)
      }
      y.data<double>()[b * H + h] = r.scale * acc + Dv[h] * ut;
    }
  s.pos++;
  return finish_step(y, x);
}

// ---- ONNX export: the convolution form (ssm_conv) as a depthwise Conv; ONNX's Conv is a cross-correlation,
// out[t] = sum_j W[j] u[t + j - pad_left], so the causal taps K0[t - s] are written reversed: W[j] = K0[L-1-j]
// (lag L-1-j), and the anticausal taps K1[s - t - 1] (lags 1..L) follow unreversed: W[L + j] = K1[j].
static Tensor conv_weight(const Tensor& K, bool two_sided) {  // K (Cc, H, L) f32 -> W (H, 1, L or 2L)
  const int64_t H = K.size(1), L = K.size(2), W = two_sided ? 2 * L : L;
  Tensor w = zeros({H, 1, W});
  const float* k = K.data<float>();
  float* pw = w.data<float>();
  for (int64_t h = 0; h < H; h++)
    for (int64_t j = 0; j < L; j++) {
      pw[h * W + j] = k[h * L + (L - 1 - j)];
      if (two_sided) pw[h * W + L + j] = k[(H + h) * L + j];
    }
  return w;
}

// K (Cc, H, L) computed on the host whatever device the layer is on (and put back there after), so that an export
// from either device writes the same file: a device's float32 kernel may differ from the host's in the last bits.
static Tensor kernel_on_host(SSMLayer& layer, int64_t L) {
  const Device d = layer.D.data().device();
  auto place = [&](Device to) {
    layer.move_buffers(to);
    for (auto& [name, v] : layer.named_parameters()) v.mutable_data() = v.data().to(to);
  };
  if (d != Device::cpu) place(Device::cpu);
  Tensor K = layer.learned_kernel(L);
  if (d != Device::cpu) place(d);
  return K;
}

std::string SSMLayer::export_onnx(onnx::Graph& g, const onnx::Sequence& in, const std::string& p) {
  namespace ox = onnx;
  const int64_t L = in.length;
  const Tensor K = kernel_on_host(*this, L);  // (Cc, H, L), computed at export time for this length
  const Tensor w = conv_weight(K, bidirectional);
  std::string u = ox::apply_mask(g, in.x, in.mask);  // (B, L, H)
  std::string y = g.node("Conv", {ox::transpose(g, u, {0, 2, 1}), g.constant(w, p + "kernel.conv_weight")},
                         {ox::attr_int("group", H), ox::attr_ints("kernel_shape", {w.size(2)}),
                          ox::attr_ints("pads", {L - 1, bidirectional ? L : 0})});                      // (B, H, L)
  y = ox::add(g, ox::transpose(g, y, {0, 2, 1}), ox::mul(g, u, g.add_initializer(p + "D", D.data())));  // K * u + D u
  y = ox::linear(g, *output_linear, ox::gelu(g, y), p + "output_linear.");
  return glu_ ? ox::glu(g, y) : y;
}

}  // namespace dl::nn
