// apps/studies/attention_approx.h - `studies attention-approx`: how well linear attention and Performer's FAVOR+
// stand in for softmax attention, and what they cost (Su Jianlin's "is softmax necessary?" question).
//
// Error: on the same queries, keys and values (B 1, 4 heads, head size 64; q, k ~ N(0, s^2) per coordinate with
// s = scale, v ~ N(0, 1)), the relative error |Y - Y_softmax|_F / |Y_softmax|_F of the non-causal outputs of
//   favor   Performer's positive orthogonal random features, m = features (nn/attention/linear_attention.h)
//   elu     phi = elu + 1 (Katharopoulos et al. 2020)        relu   phi = relu
// against exact softmax attention exp(q.k / sqrt(64)). FAVOR+ estimates the softmax kernel without bias, so its
// error falls like 1 / sqrt(m) and grows with |q|^2 + |k|^2 (the scale); elu and relu are other kernels, so their
// error does not fall. Measured against m (length fixed) and against the length (m fixed), over seeds.
// Cost: time of one forward + backward and the allocator's peak bytes for each layer as a whole mixer (projections
// included: MultiheadAttention on its best path, LinearAttention elu, Performer) at lengths 256 .. 16384.
// Output: <out>/attention_approx.{md,json}, plots error_vs_features, error_vs_length, time_vs_length, memory_vs_length.
#pragma once
#include <string>
#include <vector>

namespace studies {

struct ApproxOptions {
  std::vector<int> features = {16, 32, 64, 128, 256, 512, 1024};
  std::vector<int> lengths = {256, 1024, 4096};  // for the error against length
  std::vector<int> cost_lengths = {256, 1024, 4096, 16384};
  std::vector<double> scales = {0.5, 1.0};
  int length = 1024;  // for the error against m
  int m = 256;        // for the error against length
  int seeds = 5;
  int d_model = 256, heads = 4;
  std::string out = "runs/studies/attention_approx";
  bool cost = true;
};

// The relative error of one approximation ("favor", "elu" or "relu") for one seed.
double approx_error(const std::string& kind, int length, int m, double scale, int seed, int heads = 4);
void run_attention_approx(const ApproxOptions& o);

}  // namespace studies
