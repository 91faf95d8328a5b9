// nn/mixing/fnet.h - FNet Fourier token mixing (Lee-Thorp, Ainslie, Eckstein, Ontanon 2021, "FNet: Mixing Tokens with
// Fourier Transforms"), the mixing sublayer only. Shape letters: B batch, L length, H channels (d_model).
//
// The paper replaces self-attention with a parameter-free 2-D DFT, keeping the real part:
//   y = Re(FFT_L(FFT_H(x)))                                    (torch.fft.fft2(x).real over dims (L, H))
// With F_n[j, k] = exp(-2 pi i jk/n) = C_n - i S_n, C_n = cos(2 pi jk/n), S_n = sin(2 pi jk/n) (both symmetric):
//   F_L X F_H = (C_L - i S_L) X (C_H - i S_H),   so   Re(F_L X F_H) = C_L X C_H - S_L X S_H     per batch item
// That is what forward() computes: four matmuls against DFT matrices built once per (n, dtype) in float64 and
// cast. It is exact (no approximation, only a different summation order than an FFT), is a composition of the
// matmul primitive (so the layer has no backward of its own: the gradient is C_L dY C_H - S_L dY S_H, which
// matmul's backward produces), and runs on whatever device x is on.
//
// Padding: FNet mixes every position with every other, as in the paper. With a mask (B, L), 1 = real, the
// padded positions are zeroed BEFORE mixing, so their values cannot reach real outputs. The output still
// depends on the padded length L (the DFT has length L), and padded output positions get mixed values; the
// backbone's pooling masks those, as for every other layer.
// Deviations from the paper: none in the math. Cost is O(B (L^2 H + L H^2)) where an FFT is O(B L H log(LH)):
// fine for H and L up to a few thousand on a BLAS; an rfft-based twin would be the fused version to add.
// What it is not: an FNet encoder block (the residual, norms and feed-forward belong to the backbone, e.g.
// apps/lra_benchmark's Block), and it has no parameters (state_dict is empty, as HuggingFace's
// FNetBasicFourierTransform).
#pragma once
#include <map>
#include <tuple>
#include <utility>

#include "nn/sequence_layer.h"

namespace dl::nn {

// The real and imaginary parts' magnitudes of the n-point DFT matrix: C[j, k] = cos(2 pi jk/n),
// S[j, k] = sin(2 pi jk/n), each (n, n), computed in float64 with jk reduced mod n, then cast to dtype.
std::pair<Tensor, Tensor> dft_cos_sin(int64_t n, DType dtype);

class FNet : public SequenceLayer {
 public:
  explicit FNet(int64_t d_model) : H(d_model) {}
  static std::shared_ptr<FNet> from_config(int64_t d_model, const LayerConfig& cfg, Generator& g);
  static std::vector<std::string> config_keys() { return {}; }
  std::string type_name() const override { return "FNet"; }
  // ONNX export: the same four matmuls against the DFT matrices of the export length, as constants.
  std::string export_onnx(onnx::Graph& g, const onnx::Sequence& in, const std::string& prefix) override;
  std::string extra_repr() const override { return "H=" + std::to_string(H); }
  Var forward(const Var& x, const Tensor& mask) override;  // (B, L, H) -> (B, L, H)
  double forward_flops(int64_t batch, int64_t L) const override;  // nn/sequence_layer.h's convention
  // is_causal() stays false: every output position sees every input position.

  int64_t H;

 private:
  // DFT matrices by (n, dtype, device): built on first use for each sequence length.
  std::map<std::tuple<int64_t, DType, Device>, std::pair<Tensor, Tensor>> cache_;
  const std::pair<Tensor, Tensor>& dft(int64_t n, DType dtype, Device device);
};

}  // namespace dl::nn
