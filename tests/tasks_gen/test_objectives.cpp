// tests/tasks_gen/test_objectives.cpp - causal LM, masked denoising and T5 span corruption: known small
// cases worked out by hand, and statistics over many draws.
#include <gtest/gtest.h>

#include <numeric>

#include "tasks/objectives.h"

using namespace dl::tasks;

namespace {
// Number of maximal runs of 1s in a 0/1 mask.
int64_t count_runs(const std::vector<uint8_t>& m) {
  int64_t runs = 0;
  for (size_t i = 0; i < m.size(); ++i) runs += m[i] && (i == 0 || !m[i - 1]);
  return runs;
}
}  // namespace

TEST(Objectives, CausalLmShiftsAndIgnoresPads) {
  const TokenObjective o = causal_lm({5, 6, 7, 0, 0}, /*pad_id=*/0);
  EXPECT_EQ(o.inputs, (std::vector<int32_t>{5, 6, 7, 0}));
  EXPECT_EQ(o.targets, (std::vector<int32_t>{6, 7, kIgnoreIndex, kIgnoreIndex}));
  EXPECT_THROW(causal_lm({3}, 0), DataError);
}

TEST(Objectives, MaskTokensExtremesAndPads) {
  std::mt19937_64 rng(1);
  const std::vector<int32_t> x = {4, 5, 6, 0};
  TokenObjective all = mask_tokens(x, 1.0, /*mask_id=*/99, /*pad_id=*/0, rng);
  EXPECT_EQ(all.inputs, (std::vector<int32_t>{99, 99, 99, 0}));  // the pad is never masked
  EXPECT_EQ(all.targets, (std::vector<int32_t>{4, 5, 6, kIgnoreIndex}));
  TokenObjective none = mask_tokens(x, 0.0, 99, 0, rng);
  EXPECT_EQ(none.inputs, x);
  EXPECT_EQ(none.targets, std::vector<int32_t>(4, kIgnoreIndex));
}

TEST(Objectives, MaskTokensRateAndTargets) {
  std::mt19937_64 rng(2);
  std::vector<int32_t> x(1000);
  std::iota(x.begin(), x.end(), 1);
  int64_t masked = 0, total = 0;
  for (int rep = 0; rep < 200; ++rep) {
    const TokenObjective o = mask_tokens(x, 0.15, -7, 0, rng);
    for (size_t t = 0; t < x.size(); ++t) {
      if (o.inputs[t] == -7) {
        ++masked;
        ASSERT_EQ(o.targets[t], x[t]);
      } else {
        ASSERT_EQ(o.inputs[t], x[t]);
        ASSERT_EQ(o.targets[t], kIgnoreIndex);
      }
    }
    total += int64_t(x.size());
  }
  EXPECT_NEAR(double(masked) / total, 0.15, 0.004);  // 200k Bernoulli draws: sd ~0.0008
}

TEST(Objectives, MaskFeaturesAddsMaskChannel) {
  std::mt19937_64 rng(3);
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};  // (T=3, F=2)
  const FeatureObjective all = mask_features(x, 2, 1.0, rng);
  EXPECT_EQ(all.feature_dim, 3);
  EXPECT_EQ(all.inputs, (std::vector<float>{0, 0, 1, 0, 0, 1, 0, 0, 1}));
  EXPECT_EQ(all.targets, x);
  EXPECT_EQ(all.loss_mask, (std::vector<float>{1, 1, 1}));
  const FeatureObjective none = mask_features(x, 2, 0.0, rng);
  EXPECT_EQ(none.inputs, (std::vector<float>{1, 2, 0, 3, 4, 0, 5, 6, 0}));
  EXPECT_THROW(mask_features(x, 4, 0.5, rng), DataError);

  std::vector<float> big(4 * 10000, 1.0f);
  const FeatureObjective half = mask_features(big, 4, 0.3, rng);
  double m = 0;
  for (size_t t = 0; t < half.loss_mask.size(); ++t) {
    m += half.loss_mask[t];
    ASSERT_EQ(half.inputs[t * 5], 1.0f - half.loss_mask[t]);
    ASSERT_EQ(half.inputs[t * 5 + 4], half.loss_mask[t]);
  }
  EXPECT_NEAR(m / 10000, 0.3, 0.015);
}

TEST(Objectives, NoiseMaskKnownCases) {
  std::mt19937_64 rng(4);
  // length 20: round(20 * 0.15) = 3 noise tokens, round(3 / 3) = 1 span; keep comes first, noise last.
  std::vector<uint8_t> want(20, 0);
  want[17] = want[18] = want[19] = 1;
  EXPECT_EQ(random_spans_noise_mask(20, 0.15, 3.0, rng), want);
  // length 100: 15 noise tokens in 5 spans, first token kept, last token noise.
  for (int rep = 0; rep < 50; ++rep) {
    const std::vector<uint8_t> m = random_spans_noise_mask(100, 0.15, 3.0, rng);
    ASSERT_EQ(std::accumulate(m.begin(), m.end(), 0), 15);
    ASSERT_EQ(count_runs(m), 5);
    ASSERT_EQ(m.front(), 0);
    ASSERT_EQ(m.back(), 1);
  }
  // Tiny lengths follow T5's clamps: at least one noise and one kept token.
  EXPECT_EQ(random_spans_noise_mask(1, 0.15, 3.0, rng), std::vector<uint8_t>{0});
  EXPECT_EQ(random_spans_noise_mask(2, 0.15, 3.0, rng), (std::vector<uint8_t>{0, 1}));
}

TEST(Objectives, SpanCorruptionKnownCase) {
  std::mt19937_64 rng(5);
  std::vector<int32_t> x(20);
  std::iota(x.begin(), x.end(), 10);  // 10..29
  SpanCorruptionConfig c;
  c.sentinel_top_id = 99;
  c.eos_id = 1;
  const TokenObjective o = span_corruption(x, c, rng);
  std::vector<int32_t> want_in(x.begin(), x.begin() + 17);
  want_in.push_back(99);
  want_in.push_back(1);
  EXPECT_EQ(o.inputs, want_in);
  EXPECT_EQ(o.targets, (std::vector<int32_t>{99, 27, 28, 29, 1}));
  EXPECT_EQ(span_corruption_reconstruct(o, c), x);
}

TEST(Objectives, SpanCorruptionStatisticsSentinelsAndReconstruction) {
  std::mt19937_64 rng(6);
  SpanCorruptionConfig c;
  c.sentinel_top_id = 32099;  // T5: vocab 32100, extra_id_0 = 32099
  c.eos_id = 1;
  int64_t tokens = 0, noise = 0, spans = 0;
  for (int rep = 0; rep < 2000; ++rep) {
    const int64_t len = 20 + int64_t(rng() % 600);
    std::vector<int32_t> x(static_cast<size_t>(len));
    for (auto& t : x) t = 2 + int32_t(rng() % 30000);
    const TokenObjective o = span_corruption(x, c, rng);
    ASSERT_EQ(span_corruption_reconstruct(o, c), x) << "rep " << rep;
    // Sentinels appear in order 32099, 32098, ... in both halves.
    int32_t next_in = c.sentinel_top_id, next_tg = c.sentinel_top_id;
    int64_t n_sent = 0;
    for (int32_t t : o.inputs) {
      if (t > 30001) {
        ASSERT_EQ(t, next_in--);
      }
    }
    for (int32_t t : o.targets) {
      if (t <= 30001) continue;
      ASSERT_EQ(t, next_tg--);
      ++n_sent;
    }
    ASSERT_EQ(next_in, next_tg);
    ASSERT_EQ(o.targets.back(), 1);
    ASSERT_EQ(o.inputs.back(), 1);
    // Lengths: inputs keep len - noise tokens + one sentinel per span + eos.
    const int64_t n_noise = int64_t(o.targets.size()) - n_sent - 1;
    ASSERT_EQ(int64_t(o.inputs.size()), len - n_noise + n_sent + 1);
    tokens += len;
    noise += n_noise;
    spans += n_sent;
  }
  const double density = double(noise) / tokens, mean_span = double(noise) / spans;
  EXPECT_NEAR(density, 0.15, 0.003) << "achieved noise density";
  EXPECT_NEAR(mean_span, 3.0, 0.1) << "achieved mean span length";
  RecordProperty("noise_density", std::to_string(density));
  RecordProperty("mean_span_length", std::to_string(mean_span));
  std::printf("  span corruption over %lld tokens: noise density %.4f, mean span %.3f\n", (long long)tokens, density, mean_span);
}

TEST(Objectives, SegmentationIsUniformOverSpans) {
  // 30 noise tokens in 10 spans: by symmetry every span has mean length 3, the first as much as the last.
  std::mt19937_64 rng(7);
  double first = 0, last = 0;
  const int reps = 4000;
  for (int rep = 0; rep < reps; ++rep) {
    const std::vector<uint8_t> m = random_spans_noise_mask(200, 0.15, 3.0, rng);
    size_t i = 0;
    while (!m[i]) ++i;
    size_t j = i;
    while (j < m.size() && m[j]) ++j;
    first += double(j - i);
    size_t k = m.size();
    while (m[k - 1]) --k;
    last += double(m.size() - k);
  }
  EXPECT_NEAR(first / reps, 3.0, 0.15);
  EXPECT_NEAR(last / reps, 3.0, 0.15);
}

TEST(Objectives, SameRngStateSameCorruption) {
  std::vector<int32_t> x(300);
  std::iota(x.begin(), x.end(), 5);
  SpanCorruptionConfig c;
  c.sentinel_top_id = 1000;
  std::mt19937_64 a(9), b(9);
  EXPECT_EQ(span_corruption(x, c, a).inputs, span_corruption(x, c, b).inputs);
}
