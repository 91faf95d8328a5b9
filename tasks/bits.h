// tasks/bits.h - the FPT paper's synthetic bit tasks: Bit memory and Bit XOR (Lu et al. 2021).
//
// What it is: seeded generators that follow universal-computation's datasets/bit_memory.py and
// datasets/bit_xor.py, emitted as continuous Examples (features + target_features, feature_dim set).
// What it is not: a loss. FPT trains both tasks as per-bit 2-way classification: its loss reshapes the
// model output to (n, 2) logits per example and the target to class ids (bit memory: -1 -> 0, +1 -> 1;
// XOR: 0 -> 0, 1 -> 1). per_bit_classes() gives those ids.
//
// Bit memory layout (FPT: x = concat(bits (5, n), masked query (1, n)), y = query bits (n)):
//   features        (P+1) * n values in {-1, 0, +1}, row-major as (P+1) patterns of n bits, which is the
//                   same buffer as (T, F) = ((P+1) * n / F, F) tokens of F bits: with P = 5, n = 1000, F = 50
//                   it is 120 positions of 50 features; positions [20p, 20p+20) hold pattern p and the
//                   last 20 the query. FPT's patch_size is our bits_per_token.
//   target_features n values in {-1, +1}: the unmasked query pattern.
//   label           -1 (sequence-to-sequence); Dataset::num_classes = 0.
// The query is pattern q (q uniform in [0, P)) with each bit independently zeroed with probability 0.5
// (FPT draws mask = randint(0, 2), i.e. keep with probability 1/2).
//
// Bit XOR layout (FPT defaults n = 5, two patterns, patch_size = n):
//   features        2 * n values in {0, 1}: (T, F) = (2, n), one token per string.
//   target_features n values in {0, 1}: a XOR b.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tasks/dataset.h"

namespace dl::tasks {

struct BitMemoryConfig {
  int32_t num_patterns = 5;     // P
  int32_t num_bits = 1000;      // n
  int32_t bits_per_token = 50;  // F (FPT's patch_size); must divide n
  double mask_prob = 0.5;       // probability that a query bit is zeroed
};

// One example; if query_index is given it receives q (tests use it to check the target).
Example bit_memory_example(const BitMemoryConfig& config, std::mt19937_64& rng, int32_t* query_index = nullptr);
Dataset make_bit_memory(const BitMemoryConfig& config, int64_t num_examples, uint64_t seed,
                        const std::string& name = "bit_memory");

struct BitXorConfig {
  int32_t num_bits = 5;      // n
  int32_t num_patterns = 2;  // strings XOR-ed together (FPT's num_patterns)
};

Example bit_xor_example(const BitXorConfig& config, std::mt19937_64& rng);
Dataset make_bit_xor(const BitXorConfig& config, int64_t num_examples, uint64_t seed, const std::string& name = "bit_xor");

// FPT's per-bit class ids for the target (bit memory: value > 0 -> 1; XOR: value > 0.5 -> 1).
std::vector<int32_t> per_bit_classes(const Example& example);

}  // namespace dl::tasks
