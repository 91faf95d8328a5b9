// nn/models/sampling.cpp - see sampling.h.
#include "nn/models/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

namespace dl::nn {

void check_sampling(const SamplingOptions& o) {
  if (!(o.temperature >= 0) || !std::isfinite(o.temperature))
    fail("sampling: temperature must be a finite number >= 0 (0: greedy), found " + std::to_string(o.temperature));
  if (o.top_k < 0) fail("sampling: top_k must be >= 0 (0: no limit), found " + std::to_string(o.top_k));
  if (!(o.top_p > 0 && o.top_p <= 1)) fail("sampling: top_p must lie in (0, 1], found " + std::to_string(o.top_p));
}

int64_t sample_token(const float* logits, int64_t V, const SamplingOptions& o, Generator& g) {
  check_sampling(o);
  if (V <= 0) fail("sampling: no logits (V = " + std::to_string(V) + ")");
  std::vector<int64_t> order(V);
  std::iota(order.begin(), order.end(), 0);
  // most probable first; equal logits: the smaller id first
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  if (!std::isfinite(logits[order[0]])) fail("sampling: the logits hold no finite maximum (a NaN or +inf)");
  if (o.temperature == 0 || o.top_k == 1) return order[0];
  const int64_t k = o.top_k > 0 ? std::min(o.top_k, V) : V;
  std::vector<double> p(k);
  const double top = logits[order[0]];
  double total = 0;
  for (int64_t i = 0; i < k; i++) total += p[i] = std::exp(((double)logits[order[i]] - top) / o.temperature);
  int64_t keep = k;  // the fewest that reach top_p of the mass
  double mass = 0;
  for (int64_t i = 0; i < k; i++) {
    mass += p[i] / total;
    if (mass >= o.top_p) {
      keep = i + 1;
      break;
    }
  }
  double kept = 0;
  for (int64_t i = 0; i < keep; i++) kept += p[i];
  const double u = g.uniform() * kept;
  double acc = 0;
  for (int64_t i = 0; i < keep; i++) {
    acc += p[i];
    if (u < acc) return order[i];
  }
  return order[keep - 1];  // u rounded up to the total
}

}  // namespace dl::nn
