// tasks/bits.cpp - Bit memory and Bit XOR generators (Lu et al. 2021, FPT; see bits.h for the layout).
#include "tasks/bits.h"

namespace dl::tasks {
namespace {

// rng() itself rather than std:: distributions, so a seed gives the same data with any standard library.
bool coin(std::mt19937_64& rng) { return (rng() >> 63) != 0; }
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

void check_memory_config(const BitMemoryConfig& c) {
  if (c.num_patterns < 1 || c.num_bits < 1 || c.bits_per_token < 1 || c.num_bits % c.bits_per_token != 0)
    throw DataError("bit_memory: need num_patterns >= 1 and bits_per_token dividing num_bits, found " +
                    std::to_string(c.num_patterns) + " patterns of " + std::to_string(c.num_bits) + " bits in tokens of " +
                    std::to_string(c.bits_per_token));
  if (!(c.mask_prob >= 0.0 && c.mask_prob <= 1.0))
    throw DataError("bit_memory: mask_prob must be in [0, 1], found " + std::to_string(c.mask_prob));
}

}  // namespace

Example bit_memory_example(const BitMemoryConfig& config, std::mt19937_64& rng, int32_t* query_index) {
  check_memory_config(config);
  const size_t P = size_t(config.num_patterns), n = size_t(config.num_bits);
  Example e;
  e.features.resize((P + 1) * n);  // (P+1, n) == (T, F)
  for (size_t i = 0; i < P * n; ++i) e.features[i] = coin(rng) ? 1.0f : -1.0f;
  const int32_t q = int32_t(rng() % uint64_t(P));
  if (query_index) *query_index = q;
  e.target_features.assign(e.features.begin() + q * n, e.features.begin() + (q + 1) * n);
  for (size_t i = 0; i < n; ++i)  // the query: pattern q with each bit zeroed with probability mask_prob
    e.features[P * n + i] = uniform01(rng) < config.mask_prob ? 0.0f : e.target_features[i];
  return e;
}

Dataset make_bit_memory(const BitMemoryConfig& config, int64_t num_examples, uint64_t seed, const std::string& name) {
  check_memory_config(config);
  Dataset d;
  d.name = name;
  d.feature_dim = config.bits_per_token;
  d.max_len = (config.num_patterns + 1) * config.num_bits / config.bits_per_token;
  std::mt19937_64 rng(seed);
  d.examples.reserve(size_t(num_examples));
  for (int64_t i = 0; i < num_examples; ++i) d.examples.push_back(bit_memory_example(config, rng));
  return d;
}

Example bit_xor_example(const BitXorConfig& config, std::mt19937_64& rng) {
  if (config.num_bits < 1 || config.num_patterns < 1)
    throw DataError("bit_xor: need num_bits >= 1 and num_patterns >= 1, found " + std::to_string(config.num_bits) + " bits and " +
                    std::to_string(config.num_patterns) + " patterns");
  const size_t P = size_t(config.num_patterns), n = size_t(config.num_bits);
  Example e;
  e.features.resize(P * n);  // (T, F) = (P, n)
  e.target_features.assign(n, 0.0f);
  for (size_t p = 0; p < P; ++p)
    for (size_t i = 0; i < n; ++i) {
      const bool bit = coin(rng);
      e.features[p * n + i] = bit ? 1.0f : 0.0f;
      if (bit) e.target_features[i] = 1.0f - e.target_features[i];  // running XOR
    }
  return e;
}

Dataset make_bit_xor(const BitXorConfig& config, int64_t num_examples, uint64_t seed, const std::string& name) {
  Dataset d;
  d.name = name;
  d.feature_dim = config.num_bits;
  d.max_len = config.num_patterns;
  std::mt19937_64 rng(seed);
  d.examples.reserve(size_t(num_examples));
  for (int64_t i = 0; i < num_examples; ++i) d.examples.push_back(bit_xor_example(config, rng));
  return d;
}

std::vector<int32_t> per_bit_classes(const Example& example) {
  // Bit memory targets are in {-1, +1}, XOR targets in {0, 1}; 0.5 separates the classes of both since
  // a memory target is never 0 and never 0.5.
  std::vector<int32_t> ids;
  ids.reserve(example.target_features.size());
  for (float v : example.target_features) ids.push_back(v > 0.5f ? 1 : 0);
  return ids;
}

}  // namespace dl::tasks
