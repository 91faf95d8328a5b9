// tests/tasks_gen/test_bits.cpp - FPT Bit memory and Bit XOR generators.
#include <gtest/gtest.h>

#include "tasks/bits.h"

using namespace dl::tasks;

TEST(BitMemory, LayoutValuesAndTarget) {
  const BitMemoryConfig c;  // FPT defaults: 5 patterns of 1000 bits, tokens of 50
  std::mt19937_64 rng(1);
  int64_t zeros = 0, query_bits = 0;
  int query_counts[5] = {};
  for (int rep = 0; rep < 300; ++rep) {
    int32_t q = -1;
    const Example e = bit_memory_example(c, rng, &q);
    ASSERT_EQ(e.features.size(), 6000u);  // (120 positions, 50 features)
    ASSERT_EQ(e.target_features.size(), 1000u);
    ASSERT_GE(q, 0);
    ASSERT_LT(q, 5);
    ++query_counts[q];
    for (size_t i = 0; i < 5000; ++i) ASSERT_TRUE(e.features[i] == 1.0f || e.features[i] == -1.0f);
    for (size_t i = 0; i < 1000; ++i) {
      ASSERT_EQ(e.target_features[i], e.features[size_t(q) * 1000 + i]);  // target = the chosen pattern
      const float v = e.features[5000 + i];
      if (v == 0.0f) ++zeros;
      else ASSERT_EQ(v, e.target_features[i]);  // unmasked query bits agree with the target
    }
    query_bits += 1000;
    EXPECT_EQ(e.label, -1);
  }
  EXPECT_NEAR(double(zeros) / query_bits, 0.5, 0.006);              // 300k draws: sd ~0.0009
  for (int q = 0; q < 5; ++q) EXPECT_GT(query_counts[q], 30) << q;  // every pattern gets queried
}

TEST(BitMemory, DatasetMetadataAndDeterminism) {
  const Dataset a = make_bit_memory({}, 8, 3), b = make_bit_memory({}, 8, 3), c = make_bit_memory({}, 8, 4);
  EXPECT_EQ(a.feature_dim, 50);
  EXPECT_EQ(a.max_len, 120);
  EXPECT_EQ(a.vocab_size, 0);
  EXPECT_EQ(a.examples.size(), 8u);
  EXPECT_EQ(a.examples[5].features, b.examples[5].features);
  EXPECT_NE(a.examples[5].features, c.examples[5].features);
  const std::vector<int32_t> ids = per_bit_classes(a.examples[0]);
  ASSERT_EQ(ids.size(), 1000u);
  for (size_t i = 0; i < 1000; ++i) EXPECT_EQ(ids[i], a.examples[0].target_features[i] > 0 ? 1 : 0);
  EXPECT_THROW(make_bit_memory({.bits_per_token = 7}, 1, 0), DataError);
}

TEST(BitXor, TargetIsXorOfTheStrings) {
  const Dataset d = make_bit_xor({}, 500, 9);
  EXPECT_EQ(d.feature_dim, 5);
  EXPECT_EQ(d.max_len, 2);
  int64_t ones = 0;
  for (const Example& e : d.examples) {
    ASSERT_EQ(e.features.size(), 10u);
    ASSERT_EQ(e.target_features.size(), 5u);
    for (int i = 0; i < 5; ++i) {
      const int a = int(e.features[i]), b = int(e.features[5 + i]);
      ASSERT_TRUE((a == 0 || a == 1) && (b == 0 || b == 1));
      ASSERT_EQ(e.target_features[i], float(a ^ b));
      ones += a;
    }
    EXPECT_EQ(per_bit_classes(e)[0], int(e.target_features[0]));
  }
  EXPECT_NEAR(double(ones) / 2500, 0.5, 0.04);
}
