// tests/tasks_gen/test_batching.cpp - Batcher: determinism, padding and masks, bucketing, prefetch equals
// synchronous order, exceptions from the prefetch thread, and exact resumption from a saved position.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "tasks/batching.h"

using namespace dl::tasks;

namespace {

// 103 token examples of lengths 1..40 (token values = 100 * index + position, so any mix-up shows),
// label = index.
Dataset token_dataset(int n = 103) {
  Dataset d;
  d.name = "toy";
  d.pad_id = -1;
  d.vocab_size = 100000;
  std::mt19937_64 rng(42);
  for (int i = 0; i < n; ++i) {
    Example e;
    const int len = 1 + int(rng() % 40);
    for (int t = 0; t < len; ++t) e.tokens.push_back(100 * i + t);
    e.label = i;
    d.examples.push_back(e);
  }
  return d;
}

std::vector<std::vector<int64_t>> draw(Batcher& b, int n) {
  std::vector<std::vector<int64_t>> out;
  for (int i = 0; i < n; ++i) out.push_back(b.next().indices);
  return out;
}

bool same_batch(const Batch& a, const Batch& b) {
  return a.tokens == b.tokens && a.mask == b.mask && a.labels == b.labels && a.indices == b.indices && a.seq_len == b.seq_len &&
         a.epoch == b.epoch && a.index_in_epoch == b.index_in_epoch;
}

}  // namespace

TEST(Batching, EpochIsAPermutationAndSeedDeterminesOrder) {
  const Dataset d = token_dataset();
  Batcher a(d, {.batch_size = 10, .seed = 1}), b(d, {.batch_size = 10, .seed = 1}), c(d, {.batch_size = 10, .seed = 2});
  EXPECT_EQ(a.batches_per_epoch(), 11);
  const auto ea = draw(a, 22), eb = draw(b, 22), ec = draw(c, 22);
  EXPECT_EQ(ea, eb);
  EXPECT_NE(ea, ec);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::multiset<int64_t> seen;
    for (int i = 0; i < 11; ++i) seen.insert(ea[epoch * 11 + i].begin(), ea[epoch * 11 + i].end());
    EXPECT_EQ(seen.size(), 103u);
    EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 103u);  // each example exactly once
  }
  EXPECT_NE(std::vector(ea.begin(), ea.begin() + 11), std::vector(ea.begin() + 11, ea.end()));  // reshuffled
  EXPECT_EQ(ea[10].size(), 3u);                                                                 // last partial batch kept
  Batcher unshuffled(d, {.batch_size = 10, .shuffle = false});
  EXPECT_EQ(unshuffled.next().indices, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  Batcher dropped(d, {.batch_size = 10, .drop_last = true});
  EXPECT_EQ(dropped.batches_per_epoch(), 10);
  try {  // too few examples for one whole batch: the split, its size and the batch named
    Batcher none(d, {.batch_size = 104, .drop_last = true});
    ADD_FAILURE() << "103 examples made a batch of 104";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), d.name + ": 103 examples, fewer than one batch of 104 (training drops a last partial "
                                              "batch): a smaller batch or more data");
  }
}

TEST(Batching, PaddingAndMasks) {
  const Dataset d = token_dataset();
  Batcher b(d, {.batch_size = 7, .seed = 3});
  for (int n = 0; n < 15; ++n) {
    const Batch batch = b.next();
    const int T = batch.seq_len;
    int longest = 0;
    for (int r = 0; r < batch.batch_size; ++r) {
      const Example& e = d.examples[size_t(batch.indices[r])];
      longest = std::max(longest, int(e.tokens.size()));
      EXPECT_EQ(batch.lengths[r], int(e.tokens.size()));
      EXPECT_EQ(batch.labels[r], e.label);
      for (int t = 0; t < T; ++t) {
        const bool real = t < int(e.tokens.size());
        ASSERT_EQ(batch.mask[r * T + t], real ? 1 : 0);
        ASSERT_EQ(batch.tokens[r * T + t], real ? e.tokens[t] : d.pad_id);
      }
    }
    EXPECT_EQ(T, longest);  // padded to the longest in the batch
  }
}

TEST(Batching, FixedLengthTruncateAndErrors) {
  const Dataset d = token_dataset();
  Batcher fixed(d, {.batch_size = 5, .fixed_len = 64});
  EXPECT_EQ(fixed.next().seq_len, 64);
  Batcher cut(d, {.batch_size = 5, .shuffle = false, .fixed_len = 4, .truncate = true});
  const Batch b = cut.next();
  EXPECT_EQ(b.seq_len, 4);
  for (int r = 0; r < 5; ++r) EXPECT_EQ(b.lengths[r], std::min<int>(4, int(d.examples[r].tokens.size())));
  Batcher strict(d, {.batch_size = 5, .shuffle = false, .fixed_len = 4});
  try {
    for (int i = 0; i < 30; ++i) strict.next();
    FAIL() << "expected a DataError for a sequence longer than fixed_len";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("> fixed_len 4"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("toy example"), std::string::npos) << e.what();
  }
}

TEST(Batching, FeaturesTargetsAndSecondSequence) {
  Dataset d;
  d.name = "feat";
  d.feature_dim = 2;
  for (int i = 0; i < 6; ++i) {
    Example e;
    for (int t = 0; t < i + 1; ++t) e.features.insert(e.features.end(), {float(i), float(t)});
    e.target_features = {float(i), -float(i)};
    e.tokens2 = std::vector<int32_t>(size_t(6 - i), 7);
    d.examples.push_back(e);
  }
  Batcher b(d, {.batch_size = 3, .shuffle = false});
  const Batch x = b.next();  // examples 0, 1, 2: lengths 1, 2, 3
  EXPECT_EQ(x.seq_len, 3);
  EXPECT_EQ(x.feature_dim, 2);
  EXPECT_EQ(x.features, (std::vector<float>{0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 0, 2, 0, 2, 1, 2, 2}));
  EXPECT_EQ(x.mask, (std::vector<uint8_t>{1, 0, 0, 1, 1, 0, 1, 1, 1}));
  EXPECT_EQ(x.target_dim, 2);
  EXPECT_EQ(x.target_features, (std::vector<float>{0, 0, 1, -1, 2, -2}));
  EXPECT_EQ(x.seq_len2, 6);
  EXPECT_EQ(x.lengths2, (std::vector<int32_t>{6, 5, 4}));
  EXPECT_EQ(x.mask2[1 * 6 + 5], 0);
  EXPECT_EQ(x.mask2[1 * 6 + 4], 1);
}

TEST(Batching, BucketingReducesPaddingAndKeepsPermutation) {
  const Dataset d = token_dataset(400);
  auto waste = [&](BatcherConfig c) {
    Batcher b(d, c);
    int64_t padded = 0, real = 0;
    std::set<int64_t> seen;
    for (int i = 0; i < b.batches_per_epoch(); ++i) {
      const Batch x = b.next();
      padded += int64_t(x.batch_size) * x.seq_len;
      for (int32_t l : x.lengths) real += l;
      seen.insert(x.indices.begin(), x.indices.end());
    }
    EXPECT_EQ(seen.size(), 400u);
    return double(padded - real) / padded;
  };
  const double plain = waste({.batch_size = 16, .seed = 5});
  const double bucketed = waste({.batch_size = 16, .seed = 5, .bucket_batches = 8});
  EXPECT_LT(bucketed, plain / 3) << "plain " << plain << " bucketed " << bucketed;
}

TEST(Batching, PrefetchGivesTheSameBatches) {
  const Dataset d = token_dataset();
  Batcher sync(d, {.batch_size = 8, .seed = 11, .bucket_batches = 3});
  Batcher pre(d, {.batch_size = 8, .seed = 11, .bucket_batches = 3, .prefetch = 3});
  for (int i = 0; i < 45; ++i) ASSERT_TRUE(same_batch(sync.next(), pre.next())) << "batch " << i;
  EXPECT_EQ(sync.position(), pre.position());  // counts consumed batches, not prefetched ones
}

TEST(Batching, PrefetchPropagatesExceptionsAndShutsDownCleanly) {
  const Dataset d = token_dataset();
  {
    Batcher b(d, {.batch_size = 5, .shuffle = false, .fixed_len = 4, .prefetch = 2});
    EXPECT_THROW(
        {
          for (int i = 0; i < 30; ++i) b.next();
        },
        DataError);
    EXPECT_THROW(b.next(), DataError);  // stays failed rather than hanging
  }
  { Batcher idle(d, {.batch_size = 5, .prefetch = 4}); }  // destroyed with a full queue: must not hang
  SUCCEED();
}

TEST(Batching, ResumeFromSavedPositionSeesTheSameBatches) {
  const Dataset d = token_dataset();
  for (int prefetch : {0, 2}) {
    for (int n_before : {0, 5, 11, 17}) {  // 11 = exactly one epoch; 17 crosses into epoch 1
      const BatcherConfig config{.batch_size = 10, .seed = 77, .bucket_batches = 2, .prefetch = prefetch};
      Batcher first(d, config);
      for (int i = 0; i < n_before; ++i) first.next();
      const std::string saved = first.position().to_string();
      std::vector<Batch> want;
      for (int i = 0; i < 20; ++i) want.push_back(first.next());

      Batcher resumed(d, config);
      resumed.next();  // some unrelated progress that the restore must discard
      resumed.set_position(DataPosition::from_string(saved));
      for (int i = 0; i < 20; ++i)
        ASSERT_TRUE(same_batch(want[size_t(i)], resumed.next()))
            << "prefetch " << prefetch << " after " << n_before << " batches, batch " << i;
      EXPECT_EQ(first.position(), resumed.position());
    }
  }
}

TEST(Batching, PositionStringErrors) {
  EXPECT_THROW(DataPosition::from_string("x y z"), DataError);
  EXPECT_THROW(DataPosition::from_string("1 2 not-a-state"), DataError);
  const Dataset d = token_dataset();
  Batcher b(d, {.batch_size = 10});
  DataPosition p = b.position();
  p.index = 99;
  EXPECT_THROW(b.set_position(p), DataError);
}

// A data-parallel rank's shard: rows [begin, begin + count) of every field, the padded length kept.
TEST(Batching, SliceRowsCutsEveryFieldAlike) {
  Dataset d = token_dataset();
  BatcherConfig c;
  c.batch_size = 8;
  Batcher bt(d, c);
  Batch b = bt.next();
  Batch s = slice_rows(b, 3, 4);
  ASSERT_EQ(s.batch_size, 4);
  EXPECT_EQ(s.seq_len, b.seq_len);
  for (int i = 0; i < 4; i++) {
    EXPECT_EQ(s.labels[i], b.labels[3 + i]);
    EXPECT_EQ(s.indices[i], b.indices[3 + i]);
    EXPECT_EQ(s.lengths[i], b.lengths[3 + i]);
    for (int t = 0; t < b.seq_len; t++) {
      EXPECT_EQ(s.tokens[i * b.seq_len + t], b.tokens[(3 + i) * b.seq_len + t]);
      EXPECT_EQ(s.mask[i * b.seq_len + t], b.mask[(3 + i) * b.seq_len + t]);
    }
  }
  Batch all = slice_rows(b, 0, 8);
  EXPECT_TRUE(same_batch(all, b));
  EXPECT_THROW(slice_rows(b, 6, 3), DataError);
}
