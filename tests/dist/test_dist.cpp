// tests/dist/test_dist.cpp - data-parallel training (apps/common/data_parallel.h) on the real MPI communicator.
// ctest runs it as `mpirun -np 2 test_dist` (and once as a single process, where it checks the same properties
// against itself). Every rank runs every test; each compares the data-parallel run with a one-process reference that
// it computes itself, so a failure shows on the rank that sees it.
//   - W ranks x B/W rows == 1 rank x B rows after 10 AdamW steps (float32 reduction tolerance), dropout off
//   - ZeRO-1's layout puts each parameter in its owner's segment of a bucket; reduce-scatter and all-gather move
//     the right segments (exact sums)
//   - ZeRO-1 == plain data-parallel; each rank holds optimizer state for its own parameters only
//   - every rank holds bit-identical parameters after steps with dropout on
//   - a killed run resumes with the same ranks bit-identically, and with one rank within tolerance
//   - the LRA evaluation split over ranks equals the one-process evaluation
//   - a config that differs between ranks is named
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "apps/common/comm.h"
#include "apps/common/phase.h"
#include "apps/lra_benchmark/data.h"
#include "apps/lra_benchmark/model.h"
#include "nn/registry.h"
#include "nn/residual_block.h"
#include "optim/adam.h"
#include "optim/checkpoint.h"
#include "optim/param_groups.h"
#include "optim/sgd.h"
#include "tasks/registry.h"

using namespace dl;
namespace harness = dl::harness;
namespace fs = std::filesystem;

namespace {

harness::Communicator& world() { return harness::communicator(); }

// A scratch folder shared by the ranks (rank 0 empties it; everyone waits).
std::string shared_dir(const std::string& name) {
  std::string d = std::string(DL_BINARY_DIR) + "/test_tmp/dist_" + std::to_string(world().size()) + "_" + name;
  if (world().rank() == 0) fs::remove_all(d), fs::create_directories(d);
  world().barrier();
  return d;
}

// ListOps (generated) and a small encoder: embedding -> 2 residual blocks around attention / S4D -> mean -> head.
const tasks::TaskData& listops() {
  static tasks::TaskData d = tasks::make_task("listops", {48, 256, 64, 64, 3, ""});
  return d;
}

struct Encoder : nn::Module {
  Encoder(const std::string& layer, double dropout, Generator& g) {
    const tasks::Dataset& d = listops().train;
    embed = register_module("embed", std::make_shared<nn::Embedding>(d.vocab_size, 16, g));
    blocks = register_module("blocks", std::make_shared<nn::ModuleList<nn::ResidualBlock>>());
    for (int i = 0; i < 2; i++) {
      const nn::LayerEntry& e = nn::find_layer(layer);
      auto mixer = e.make(16, nn::backbone_config(e, {dropout, false, d.max_len, 8, 2}), g);
      blocks->push_back(std::make_shared<nn::ResidualBlock>(mixer, 16, nn::ResidualBlockOptions{"layer", true, dropout, 32}, g));
    }
    head = register_module("head", std::make_shared<nn::Linear>(16, d.num_classes, g));
  }
  std::string type_name() const override { return "Encoder"; }
  Var loss(const tasks::Batch& b) {
    const int64_t B = b.batch_size, T = b.seq_len;
    Tensor tok = Tensor::empty({B, T}, DType::i64), mask = Tensor::empty({B, T}), y = Tensor::empty({B}, DType::i64);
    for (int64_t i = 0; i < B * T; i++) tok.data<int64_t>()[i] = b.tokens[i], mask.data<float>()[i] = b.mask[i];
    for (int64_t i = 0; i < B; i++) y.data<int64_t>()[i] = b.labels[i];
    Var x = embed->forward(tok);
    for (auto& blk : blocks->items()) x = blk->forward(x, mask);
    Var pooled = div(sum(mul(x, Var(mask.unsqueeze(2))), {1}), Var(sum(mask, {1}, true)));
    return cross_entropy(head->forward(pooled), y);
  }
  std::shared_ptr<nn::Embedding> embed;
  std::shared_ptr<nn::ModuleList<nn::ResidualBlock>> blocks;
  std::shared_ptr<nn::Linear> head;
};

// One training run: 10 steps of AdamW (with weight decay, a cosine schedule and clipping) at global batch 16.
struct TrainRun {
  Generator g{5};
  Encoder m;
  optim::AdamW opt;
  tasks::Batcher batches{listops().train, {16, 9, true, true}};
  harness::PhaseParts parts;
  std::vector<harness::CurvePoint> curve;
  explicit TrainRun(const std::string& layer = "attention", double dropout = 0.0) : m(layer, dropout, g), opt(groups(m), {}) {
    parts.model = &m, parts.opt = &opt, parts.batches = &batches, parts.rngs = {{"dropout", &g}};
    optim::ScheduleConfig sc;
    sc.kind = "warmup_cosine", sc.warmup = 2, sc.total = 10;
    parts.schedule = optim::make_schedule(sc);
    parts.loss = [this](const tasks::Batch& b, const harness::Step&) { return m.loss(b); };
  }
  static std::vector<optim::ParamGroup> groups(nn::Module& m) {
    optim::GroupingOptions go;
    go.lr = 3e-3, go.weight_decay = 0.01, go.no_decay_norm_bias_embed = true;
    go.rules = {optim::s4_rule(1e-3, nn::own_lr_parameter_names(m))};
    return optim::make_param_groups(m, go);
  }
  void train(const std::string& dir, harness::Communicator& comm, bool zero1 = false, bool resume = false, int stop_after = -1,
             int64_t bucket_bytes = 2048) {
    harness::RunContext ctx;
    ctx.out = ctx.dir = dir, ctx.label = "[dist]", ctx.quiet = true, ctx.resume = resume, ctx.stop_after = stop_after;
    ctx.comm = &comm, ctx.parallel.zero1 = zero1, ctx.parallel.bucket_bytes = bucket_bytes;  // small buckets: several
    harness::run_phase({"train", 10, 1, 0.5, 5, 5}, parts, ctx, curve);
  }
  std::vector<float> flat() const {
    std::vector<float> v;
    for (auto& [n, p] : m.named_parameters()) {
      Tensor t = p.data().contiguous();
      v.insert(v.end(), t.data<float>(), t.data<float>() + t.numel());
    }
    return v;
  }
};

::testing::AssertionResult close(const std::vector<float>& a, const std::vector<float>& b, double rel) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << a.size() << " vs " << b.size() << " values";
  double num = 0, den = 0, worst = 0;
  for (size_t i = 0; i < a.size(); i++) num += (a[i] - b[i]) * (double)(a[i] - b[i]), den += (double)b[i] * b[i];
  for (size_t i = 0; i < a.size(); i++) worst = std::max(worst, (double)std::fabs(a[i] - b[i]));
  double r = std::sqrt(num / den);
  if (r <= rel) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "relative difference " << r << " > " << rel << " (largest " << worst << ")";
}

std::string bytes_hash(const std::vector<float>& v) {
  return std::to_string(std::hash<std::string>{}(std::string((const char*)v.data(), v.size() * 4)));
}

}  // namespace

// Float32 sums in another order (the shards' partial gradients, then the all-reduce) differ in the last bits (the
// gradients agree to 4e-7 relative: ShardGradientsSumToTheWholeBatchGradient). AdamW divides by the gradients' running
// RMS, so where a gradient is near zero its rounding noise becomes a step of up to lr: after 10 steps the weights
// agree to about 2.4e-5 relative (measured, 2 ranks). The bound allows 4x that.
constexpr double kRel = 1e-4;

TEST(DataParallel, RanksWithShardsEqualOneProcessWithTheWholeBatch) {
  for (std::string layer : {"attention", "s4d"}) {
    SCOPED_TRACE(layer);
    std::string d = shared_dir("equal_" + layer);
    TrainRun dp(layer), one(layer);
    dp.train(d + "/dp", world());
    one.train(d + "/one_" + std::to_string(world().rank()), harness::single_process());  // every rank alone, whole batches
    EXPECT_TRUE(close(dp.flat(), one.flat(), kRel));
    ASSERT_EQ(dp.curve.size(), one.curve.size());
    for (size_t i = 0; i < dp.curve.size(); i++) EXPECT_NEAR(dp.curve[i].train_loss, one.curve[i].train_loss, 1e-5);
    EXPECT_NE(dp.flat(), TrainRun(layer).flat());  // training moved the weights
  }
}

// One plain SGD step (lr 1, no clipping): the weights move by exactly the summed gradient, so this compares the
// gradients of the shards' sum with the whole batch's.
TEST(DataParallel, ShardGradientsSumToTheWholeBatchGradient) {
  for (std::string layer : {"attention", "s4d"}) {
    SCOPED_TRACE(layer);
    std::string d = shared_dir("grad_" + layer);
    TrainRun dp(layer), one(layer), start(layer);
    optim::SGD sgd_dp(dp.m.parameters(), {1.0}), sgd_one(one.m.parameters(), {1.0});
    dp.parts.opt = &sgd_dp, one.parts.opt = &sgd_one;
    dp.parts.schedule = one.parts.schedule = optim::make_schedule({});
    harness::RunContext a, b;
    a.out = a.dir = d + "/dp", b.out = b.dir = d + "/one_" + std::to_string(world().rank());
    a.quiet = b.quiet = true, a.comm = &world(), a.parallel.bucket_bytes = 2048;
    harness::run_phase({"train", 1, 1, 0.0, 0, 0}, dp.parts, a, dp.curve);
    harness::run_phase({"train", 1, 1, 0.0, 0, 0}, one.parts, b, one.curve);
    std::vector<float> w0 = start.flat(), wa = dp.flat(), wb = one.flat(), ga(w0.size()), gb(w0.size());
    for (size_t i = 0; i < w0.size(); i++) ga[i] = w0[i] - wa[i], gb[i] = w0[i] - wb[i];
    EXPECT_TRUE(close(ga, gb, 1e-6));  // measured 4.1e-7 (attention) and 2.4e-7 (s4d) with 2 ranks: float32 rounding
  }
}

// ZeRO-1's layout by hand: buckets {p0, p1}, {p2, p3}, {p4} (1024 bytes = 256 floats close a bucket), two ranks.
// Largest first to the emptier segment: p1 (300) and p3 (1000) go to rank 0, p0 and p2 to rank 1, p4 to rank 0;
// each segment is as long as the bucket's longest (rank 1's segment of bucket 2 is all padding).
TEST(ZeroOne, LayoutPutsEachParameterInItsOwnersSegment) {
  harness::BucketPlan p = harness::plan_buckets({10, 300, 5, 1000, 7}, 1024, 2);
  EXPECT_EQ(p.params, (std::vector<std::vector<size_t>>{{0, 1}, {2, 3}, {4}}));  // the plain plan's buckets
  EXPECT_EQ(p.owner, (std::vector<int>{1, 0, 1, 0, 0}));
  EXPECT_EQ(p.segment, (std::vector<int64_t>{300, 1000, 7}));
  EXPECT_EQ(p.numel, (std::vector<int64_t>{600, 2000, 14}));
  EXPECT_EQ(p.offset, (std::vector<int64_t>{300, 0, 1000, 0, 0}));
  Generator g(11);  // random layouts: slices inside their owner's segment, disjoint, segments even within the largest
  for (int trial = 0; trial < 60; trial++) {
    const int W = 1 + trial % 4;
    std::vector<int64_t> sizes;
    for (int i = 0, n = 1 + (int)(g.uniform() * 25); i < n; i++) sizes.push_back(1 + (int64_t)(g.uniform() * 900));
    const int64_t bytes = 1 + (int64_t)(g.uniform() * 6000);
    harness::BucketPlan q = harness::plan_buckets(sizes, bytes, W);
    EXPECT_EQ(q.params, harness::plan_buckets(sizes, bytes).params);  // the same buckets as plain data-parallel
    ASSERT_EQ(q.owner.size(), sizes.size());
    for (size_t b = 0; b < q.params.size(); b++) {
      ASSERT_EQ(q.numel[b], W * q.segment[b]);
      std::vector<int> used(q.numel[b], 0);
      std::vector<int64_t> fill(W, 0);
      int64_t largest = 0;
      for (size_t i : q.params[b]) {
        const int r = q.owner[i];
        ASSERT_TRUE(r >= 0 && r < W);
        EXPECT_GE(q.offset[i], r * q.segment[b]);
        EXPECT_LE(q.offset[i] + sizes[i], (r + 1) * q.segment[b]);
        for (int64_t k = 0; k < sizes[i]; k++) used[q.offset[i] + k]++;
        fill[r] += sizes[i], largest = std::max(largest, sizes[i]);
      }
      EXPECT_EQ(*std::max_element(used.begin(), used.end()), 1) << "two slices overlap in bucket " << b;
      EXPECT_EQ(*std::max_element(fill.begin(), fill.end()), q.segment[b]);  // no longer than it must be
      EXPECT_LE(q.segment[b] - *std::min_element(fill.begin(), fill.end()), largest);  // greedy: within one parameter
    }
  }
}

// The communicator's two ZeRO-1 collectives on this job's ranks: quarters and small integers, so the sums are exact.
TEST(ZeroOne, ReduceScatterAndAllGatherMoveTheRightSegments) {
  harness::Communicator& c = world();
  const int W = c.size(), r = c.rank();
  const int64_t n = 1000 + 3;
  auto value = [](int rank, int64_t i) { return (float)((rank + 1) * 0.25 + (double)(i % 17)); };
  std::vector<float> send(W * n), part(n, -1.f);
  for (int64_t i = 0; i < W * n; i++) send[i] = value(r, i);
  c.wait(c.ireduce_scatter_sum(send.data(), part.data(), n), "reduce-scatter");
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; i++) {
    double want = 0;
    for (int q = 0; q < W; q++) want += value(q, r * n + i);
    wrong += part[i] != (float)want;
  }
  EXPECT_EQ(wrong, 0) << "rank " << r << ": reduce-scatter gave " << part[0] << " at 0";
  std::vector<float> mine(n), all(W * n, -1.f);
  for (int64_t i = 0; i < n; i++) mine[i] = value(r, i) + 100 * r;
  c.wait(c.iallgather(mine.data(), all.data(), n), "all-gather");
  wrong = 0;
  for (int q = 0; q < W; q++)
    for (int64_t i = 0; i < n; i++) wrong += all[q * n + i] != value(q, i) + 100 * q;
  EXPECT_EQ(wrong, 0) << "rank " << r << ": all-gather";
}

TEST(DataParallel, ZeroOneEqualsPlainDataParallelAndShardsTheState) {
  std::string d = shared_dir("zero1");
  TrainRun plain, zero;
  plain.train(d + "/plain", world());
  zero.train(d + "/zero", world(), /*zero1=*/true);
  EXPECT_TRUE(close(zero.flat(), plain.flat(), kRel));
  size_t mine = zero.opt.state_dict().tensors.size(), all = plain.opt.state_dict().tensors.size();
  if (world().size() > 1) {
    EXPECT_LT(mine, all) << "rank " << world().rank() << " holds every parameter's moments";
  }
  double counts[1] = {(double)mine};
  world().allreduce_sum(counts, 1);
  EXPECT_EQ(counts[0], (double)all) << "the ranks' shards should partition the optimizer state";
}

TEST(DataParallel, ReplicasStayBitIdenticalWithDropout) {
  std::string d = shared_dir("replicas");
  TrainRun r("attention", 0.2);
  r.train(d, world());
  EXPECT_NO_THROW(harness::check_same_on_every_rank(world(), bytes_hash(r.flat()), "the parameters"));
}

TEST(DataParallel, KilledRunResumesWithTheSameRanksAndWithOne) {
  std::string d = shared_dir("resume");
  TrainRun whole("attention", 0.2);
  whole.train(d + "/whole", world());
  {
    TrainRun part("attention", 0.2);  // killed after 7 steps: the checkpoint at step 5 survives
    EXPECT_THROW(part.train(d + "/part", world(), false, false, 7), harness::Interrupted);
  }
  if (world().rank() == 0) fs::copy(d + "/part", d + "/alone", fs::copy_options::recursive);
  world().barrier();
  TrainRun resumed("attention", 0.2);
  resumed.train(d + "/part", world(), false, /*resume=*/true);
  EXPECT_EQ(resumed.flat(), whole.flat()) << "resume with the same ranks is exact";
  // the same checkpoint, resumed by one process with dropout off on both sides: within the reduction tolerance
  TrainRun whole0, part0, alone;
  whole0.train(d + "/whole0", world());
  EXPECT_THROW(part0.train(d + "/part0", world(), /*zero1=*/true, false, 7), harness::Interrupted);  // a ZeRO-1 checkpoint
  if (world().rank() == 0) {
    alone.train(d + "/part0", harness::single_process(), false, /*resume=*/true);
    EXPECT_TRUE(close(alone.flat(), whole0.flat(), kRel));
  }
  world().barrier();
}

TEST(DataParallel, LraEvaluationSplitOverRanksEqualsOneProcess) {
  lra::CellConfig c;
  c.task = "listops", c.model = "s4d", c.d_model = 16, c.layers = 1, c.d_state = 8, c.seq_len = 48;
  c.train_size = 64, c.val_size = 80, c.test_size = 16;
  const tasks::TaskData& data = lra::task_data(c);
  Generator g(1);
  lra::LraModel m(c, lra::shape_of(data), false, g);
  lra::SplitEval split = lra::evaluate_split(m, data.val, 16, 0, world()), one = lra::evaluate_split(m, data.val, 16, 0);
  EXPECT_EQ(split.examples, one.examples);
  EXPECT_EQ(split.accuracy, one.accuracy);
  EXPECT_NEAR(split.loss, one.loss, 1e-12);
}

TEST(DataParallel, ConfigThatDiffersBetweenRanksIsNamed) {
  if (world().size() < 2) GTEST_SKIP() << "needs two ranks";
  try {
    harness::check_same_on_every_rank(world(), world().rank() == 1 ? "lr=0.1" : "lr=0.2", "the config of cell x");
    FAIL() << "no error";
  } catch (const harness::CommError& e) {
    EXPECT_NE(std::string(e.what()).find("the config of cell x differs between ranks: rank 1"), std::string::npos) << e.what();
  }
}

// Ranks other than 0 print only their failures (rank 0 prints the usual progress).
struct FailuresOnly : ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "rank %d: %s:%d: %s\n", world().rank(), r.file_name() ? r.file_name() : "?", r.line_number(),
                   r.summary());
  }
};

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  harness::Communicator& c = world();
  if (c.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailuresOnly);
  }
  int rc = RUN_ALL_TESTS();
  double failed = rc != 0;
  c.allreduce_sum(&failed, 1);  // the job fails if any rank failed
  if (c.rank() != 0 && rc != 0) std::fprintf(stderr, "rank %d: %d test(s) failed (see above)\n", c.rank(), rc);
  return failed > 0 ? 1 : 0;
}
