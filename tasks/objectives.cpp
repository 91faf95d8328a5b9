// tasks/objectives.cpp - causal LM, masked denoising and T5 span corruption (see objectives.h).
//
// Randomness uses only rng() itself (no std:: distributions, whose algorithms differ between standard
// libraries), so a seed gives the same corruption with any compiler.
#include "tasks/objectives.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "tasks/dataset.h"

namespace dl::tasks {
namespace {

double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Uniform integer in [0, n); the modulo bias is below n / 2^64, far under anything measurable.
int64_t uniform_index(std::mt19937_64& rng, int64_t n) { return static_cast<int64_t>(rng() % uint64_t(n)); }

// T5's _random_segmentation: split num_items into num_segments positive lengths, uniformly over all
// such compositions. T5 shuffles (num_items - 1) flags of which (num_segments - 1) are "start a new
// segment"; choosing the cut positions by a partial Fisher-Yates shuffle is the same distribution.
std::vector<int64_t> random_segmentation(int64_t num_items, int64_t num_segments, std::mt19937_64& rng) {
  std::vector<uint8_t> starts(static_cast<size_t>(num_items - 1), 0);
  std::fill(starts.begin(), starts.begin() + (num_segments - 1), 1);
  for (int64_t i = num_items - 2; i > 0; --i) std::swap(starts[i], starts[uniform_index(rng, i + 1)]);
  std::vector<int64_t> lengths(static_cast<size_t>(num_segments), 0);
  int64_t segment = 0;
  lengths[0] = 1;  // item 0 always opens segment 0 (T5 pads the flags with a leading 0)
  for (int64_t i = 0; i < num_items - 1; ++i) {
    segment += starts[i];
    ++lengths[segment];
  }
  return lengths;
}

}  // namespace

TokenObjective causal_lm(const std::vector<int32_t>& x, int32_t pad_id) {
  if (x.size() < 2) throw DataError("causal_lm: sequence needs at least 2 tokens, found " + std::to_string(x.size()));
  TokenObjective out;
  out.inputs.assign(x.begin(), x.end() - 1);
  out.targets.reserve(x.size() - 1);
  for (size_t t = 1; t < x.size(); ++t) out.targets.push_back(x[t] == pad_id ? kIgnoreIndex : x[t]);
  return out;
}

TokenObjective mask_tokens(const std::vector<int32_t>& x, double p, int32_t mask_id, int32_t pad_id, std::mt19937_64& rng) {
  if (!(p >= 0.0 && p <= 1.0)) throw DataError("mask_tokens: p must be in [0, 1], found " + std::to_string(p));
  TokenObjective out{x, std::vector<int32_t>(x.size(), kIgnoreIndex)};
  for (size_t t = 0; t < x.size(); ++t) {
    if (x[t] == pad_id) continue;  // never ask the model to predict padding
    if (uniform01(rng) < p) {
      out.inputs[t] = mask_id;
      out.targets[t] = x[t];
    }
  }
  return out;
}

FeatureObjective mask_features(const std::vector<float>& x, int32_t feature_dim, double p, std::mt19937_64& rng) {
  if (feature_dim <= 0 || x.size() % size_t(feature_dim) != 0)
    throw DataError("mask_features: " + std::to_string(x.size()) + " values do not split into positions of " +
                    std::to_string(feature_dim) + " features");
  if (!(p >= 0.0 && p <= 1.0)) throw DataError("mask_features: p must be in [0, 1], found " + std::to_string(p));
  const size_t F = size_t(feature_dim), T = x.size() / F;
  FeatureObjective out;
  out.feature_dim = feature_dim + 1;
  out.targets = x;
  out.loss_mask.resize(T);
  out.inputs.resize(T * (F + 1));
  for (size_t t = 0; t < T; ++t) {
    const float m = uniform01(rng) < p ? 1.0f : 0.0f;
    out.loss_mask[t] = m;
    for (size_t f = 0; f < F; ++f) out.inputs[t * (F + 1) + f] = x[t * F + f] * (1.0f - m);  // (T, F+1)
    out.inputs[t * (F + 1) + F] = m;  // the mask channel tells the model which positions to fill in
  }
  return out;
}

std::vector<uint8_t> random_spans_noise_mask(int64_t length, double density, double mean_span_length, std::mt19937_64& rng) {
  if (length < 1) throw DataError("random_spans_noise_mask: length must be >= 1, found " + std::to_string(length));
  if (!(density > 0.0 && density < 1.0) || !(mean_span_length >= 1.0))
    throw DataError("random_spans_noise_mask: need 0 < density < 1 and mean_span_length >= 1, found density " +
                    std::to_string(density) + ", mean span " + std::to_string(mean_span_length));
  const int64_t orig_length = length;
  length = std::max<int64_t>(length, 2);  // T5: a one-token sequence is treated as two, then cut back
  // std::nearbyint rounds half to even under the default rounding mode, like tf.round.
  int64_t num_noise = static_cast<int64_t>(std::nearbyint(double(length) * density));
  num_noise = std::clamp<int64_t>(num_noise, 1, length - 1);
  int64_t num_spans = static_cast<int64_t>(std::nearbyint(double(num_noise) / mean_span_length));
  const int64_t num_keep = length - num_noise;
  num_spans = std::clamp<int64_t>(num_spans, 1, std::min(num_noise, num_keep));  // deviation: see header

  const std::vector<int64_t> noise_lengths = random_segmentation(num_noise, num_spans, rng);
  const std::vector<int64_t> keep_lengths = random_segmentation(num_keep, num_spans, rng);
  std::vector<uint8_t> mask;
  mask.reserve(size_t(length));
  for (int64_t s = 0; s < num_spans; ++s) {  // interleave keep_0, noise_0, keep_1, noise_1, ...
    mask.insert(mask.end(), size_t(keep_lengths[s]), 0);
    mask.insert(mask.end(), size_t(noise_lengths[s]), 1);
  }
  mask.resize(size_t(orig_length));
  return mask;
}

TokenObjective span_corruption(const std::vector<int32_t>& x, const SpanCorruptionConfig& config, std::mt19937_64& rng) {
  if (x.size() < 2) throw DataError("span_corruption: sequence needs at least 2 tokens, found " + std::to_string(x.size()));
  const std::vector<uint8_t> noise =
      random_spans_noise_mask(int64_t(x.size()), config.noise_density, config.mean_span_length, rng);
  TokenObjective out;
  int32_t sentinel = config.sentinel_top_id;
  for (size_t t = 0; t < x.size(); ++t) {
    const bool span_start = noise[t] && (t == 0 || !noise[t - 1]);
    if (span_start) {  // T5 noise_span_to_unique_sentinel: one sentinel per span, counting down
      out.inputs.push_back(sentinel);
      out.targets.push_back(sentinel);
      --sentinel;
    }
    if (noise[t]) out.targets.push_back(x[t]);
    else out.inputs.push_back(x[t]);
  }
  if (config.eos_on_inputs) out.inputs.push_back(config.eos_id);
  out.targets.push_back(config.eos_id);
  return out;
}

std::vector<int32_t> span_corruption_reconstruct(const TokenObjective& corrupted, const SpanCorruptionConfig& config) {
  std::vector<int32_t> inputs = corrupted.inputs, targets = corrupted.targets;
  if (config.eos_on_inputs && !inputs.empty() && inputs.back() == config.eos_id) inputs.pop_back();
  if (!targets.empty() && targets.back() == config.eos_id) targets.pop_back();
  // Sentinel ids are reserved (never ordinary tokens), so the next expected sentinel marks each span.
  std::vector<int32_t> out;
  size_t ti = 0;
  int32_t sentinel = config.sentinel_top_id;
  for (int32_t token : inputs) {
    if (token != sentinel) {
      out.push_back(token);
      continue;
    }
    if (ti >= targets.size() || targets[ti] != sentinel)
      throw DataError("span_corruption_reconstruct: sentinel " + std::to_string(sentinel) +
                      " of the inputs is missing from the targets");
    ++ti;
    --sentinel;
    while (ti < targets.size() && targets[ti] != sentinel) out.push_back(targets[ti++]);
  }
  return out;
}

}  // namespace dl::tasks
