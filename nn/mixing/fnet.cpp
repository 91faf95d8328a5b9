// nn/mixing/fnet.cpp - FNet Fourier token mixing (math and references in nn/mixing/fnet.h).
#include "nn/mixing/fnet.h"

#include <cmath>
#include <vector>

#include "nn/onnx/ops.h"

namespace dl::nn {

std::pair<Tensor, Tensor> dft_cos_sin(int64_t n, DType dtype) {
  std::vector<double> c(n * n), s(n * n);
  for (int64_t j = 0; j < n; j++)
    for (int64_t k = 0; k < n; k++) {
      // reduce jk mod n first: the angle stays in [0, 2 pi), so cos/sin lose no accuracy for large n
      const double a = 2.0 * M_PI * (double)((j * k) % n) / (double)n;
      c[j * n + k] = std::cos(a), s[j * n + k] = std::sin(a);
    }
  return {from_vector(c, {n, n}).to(dtype), from_vector(s, {n, n}).to(dtype)};
}

const std::pair<Tensor, Tensor>& FNet::dft(int64_t n, DType dtype, Device device) {
  auto key = std::make_tuple(n, dtype, device);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  auto [c, s] = dft_cos_sin(n, dtype);
  return cache_[key] = {c.to(device), s.to(device)};
}

std::shared_ptr<FNet> FNet::from_config(int64_t d_model, const LayerConfig& cfg, Generator&) {
  check_config_keys(cfg, "fnet", config_keys());  // parameter-free: any field is a mistake worth reporting
  if (d_model < 1) config_error("fnet", "d_model", "must be >= 1", std::to_string(d_model));
  return std::make_shared<FNet>(d_model);
}

Var FNet::forward(const Var& x, const Tensor& mask) {
  check_sequence_input("fnet", x, H);
  const int64_t L = x.size(1);
  if (mask.defined() && (mask.dim() != 2 || mask.size(0) != x.size(0) || mask.size(1) != L))
    fail("layer fnet: padding mask must be (B, L) = (" + std::to_string(x.size(0)) + ", " + std::to_string(L) + "), found " +
         shape_str(mask.shape()));
  Var u = apply_mask(x, mask);                            // (B, L, H), padded positions zeroed
  auto& [CH, SH] = dft(H, x.dtype(), x.data().device());  // (H, H)
  auto& [CL, SL] = dft(L, x.dtype(), x.data().device());  // (L, L)
  Var p = matmul(u, Var(CH)), q = matmul(u, Var(SH));     // (B, L, H): X C_H, X S_H
  return matmul(Var(CL), p) - matmul(Var(SL), q);         // (B, L, H): C_L X C_H - S_L X S_H
}

std::string FNet::export_onnx(onnx::Graph& g, const onnx::Sequence& in, const std::string& p) {
  namespace ox = onnx;
  auto [CH, SH] = dft_cos_sin(H, DType::f32);                               // (H, H)
  auto [CL, SL] = dft_cos_sin(in.length, DType::f32);                       // (L, L)
  std::string u = ox::apply_mask(g, in.x, in.mask);                         // (B, L, H), padded positions zeroed
  std::string xc = g.node("MatMul", {u, g.constant(CH, p + "dft_cos_h")});  // X C_H
  std::string xs = g.node("MatMul", {u, g.constant(SH, p + "dft_sin_h")});  // X S_H
  std::string a = g.node("MatMul", {g.constant(CL, p + "dft_cos_l"), xc});  // C_L X C_H
  std::string b = g.node("MatMul", {g.constant(SL, p + "dft_sin_l"), xs});  // S_L X S_H
  return g.node("Sub", {a, b});                                             // (B, L, H)
}

// ---- FLOP count (nn/sequence_layer.h's convention) ----
// What forward() computes: four products against DFT matrices, X C_H and X S_H (2 x 2 L H^2) and C_L (.) and S_L (.)
// (2 x 2 L^2 H) per batch item; the subtraction is elementwise. An FFT-based FNet would count 5 n log2 n per complex
// transform instead, O(L H log(L H)): this layer is quadratic in L, and its count says so.
double FNet::forward_flops(int64_t batch, int64_t L) const {
  return batch * (2 * matmul_flops(L, H, H) + 2 * matmul_flops(L, L, H));
}

}  // namespace dl::nn
