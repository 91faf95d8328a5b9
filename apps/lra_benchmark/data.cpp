// apps/lra_benchmark/data.cpp - the task's data as the model sees it (see data.h).
#include "data.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>

#include "apps/common/batch_tensors.h"
#include "tasks/english.h"
#include "tasks/objectives.h"
#include "tasks/registry.h"
#include "tasks/tokenizer.h"

namespace lra {

using namespace dl;
namespace harness = dl::harness;

// The task's three splits as the registry makes them (the embedded generator or the official files).
static void make_split(std::unique_ptr<tasks::TaskData>& slot, const CellConfig& c) {
  tasks::TaskConfig tc;
  tc.seq_len = c.seq_len;
  tc.train_size = c.train_size, tc.val_size = c.val_size, tc.test_size = c.test_size;
  tc.seed = (uint64_t)c.seed;
  tc.data_path = c.data_path;
  slot = std::make_unique<tasks::TaskData>(tasks::make_task(c.task, tc));
  for (auto* d : {&slot->train, &slot->val, &slot->test})
    if (d->examples.empty()) throw tasks::DataError(c.task + ": split " + d->name + " is empty");
}

const tasks::TaskData& task_data(const CellConfig& c) {
  static std::map<std::string, std::unique_ptr<tasks::TaskData>> cache;
  static std::mutex mu;
  std::string key = c.task + "|" + std::to_string(c.seq_len) + "|" + std::to_string(c.train_size) + "|" +
                    std::to_string(c.val_size) + "|" + std::to_string(c.test_size) + "|" + std::to_string(c.seed) + "|" +
                    c.data_path;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[key];
  if (!slot) make_split(slot, c);
  if (c.train_limit <= 0) return *slot;
  // A subset of the training split: the first train_limit examples of a permutation fixed by the seed, kept in their
  // order, so a smaller limit's subset lies inside a larger one's (data-scale's fractions are nested) and the
  // subset is spread over the whole split (a document-ordered split is not cut to its first documents).
  auto& sub = cache[key + "|limit " + std::to_string(c.train_limit)];
  if (!sub) {
    const auto& all = slot->train.examples;
    if ((size_t)c.train_limit > all.size())
      throw ConfigError(c.key() + ": train_limit " + std::to_string(c.train_limit) + " exceeds the training split's " +
                        std::to_string(all.size()) + " examples");
    std::vector<size_t> order(all.size());
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng((uint64_t)c.seed * 104729 + 17);
    std::shuffle(order.begin(), order.end(), rng);
    order.resize((size_t)c.train_limit);
    std::sort(order.begin(), order.end());
    sub = std::make_unique<tasks::TaskData>(*slot);
    sub->train.examples.clear();
    for (size_t i : order) sub->train.examples.push_back(all[i]);
  }
  return *sub;
}

tasks::TaskData text_corpus_data(const CellConfig& c, const tasks::TaskData& task) {
  const int32_t byte_vocab = tasks::ByteTokenizer().vocab_size();
  if (task.train.feature_dim != 0 || task.train.vocab_size != byte_vocab)
    throw ConfigError(c.key() + ": text-masked pretrains on English text as bytes, which needs a task whose tokens are bytes "
                      "(vocabulary " + std::to_string(byte_vocab) + ": text, retrieval); " + c.task + " has " +
                      (task.train.feature_dim ? "continuous inputs" : "vocabulary " + std::to_string(task.train.vocab_size)));
  static const std::string fortunes = [] {
    tasks::EnglishCorpus corpus = tasks::english_corpus();
    return corpus.text.substr((size_t)corpus.brown_bytes);  // Brown comes first; what follows is the fortunes
  }();
  if (fortunes.size() < 100000)
    throw tasks::DataError("text-masked pretrains on Debian's fortunes (/usr/share/games/fortunes), and " +
                           std::to_string(fortunes.size()) + " bytes of it were found (install the package `fortunes`)");
  const size_t cut = fortunes.size() * 95 / 100;
  std::mt19937_64 rng((uint64_t)c.seed * 15485863ull + 29);
  // one window of `len` bytes from [lo, hi) as byte tokens
  auto window = [&](size_t len, size_t lo, size_t hi) {
    len = std::min(len, hi - lo);
    size_t at = lo + std::uniform_int_distribution<size_t>(0, hi - lo - len)(rng);
    std::vector<int32_t> ids(len);
    for (size_t i = 0; i < len; i++) ids[i] = tasks::ByteTokenizer::byte_offset + (unsigned char)fortunes[at + i];
    return ids;
  };
  tasks::TaskData out;
  for (auto [from, to, lo, hi] : {std::tuple{&task.train, &out.train, (size_t)0, cut},
                                  std::tuple{&task.val, &out.val, cut, fortunes.size()}}) {
    *to = *from;
    to->name = "fortunes/" + from->name;
    for (auto& e : to->examples) {
      e.tokens = window(e.tokens.size(), lo, hi);
      if (!e.tokens2.empty()) e.tokens2 = window(e.tokens2.size(), lo, hi);
    }
  }
  out.test = out.val;  // unused: pretraining reads train and val only
  return out;
}

TaskShape shape_of(const tasks::TaskData& d) {
  TaskShape s;
  s.vocab = d.train.vocab_size;
  s.features = d.train.feature_dim;
  s.classes = d.train.num_classes;
  s.two_tower = !d.train.examples.front().tokens2.empty();
  int64_t longest = d.train.max_len;
  for (auto* ds : {&d.train, &d.val, &d.test})
    for (auto& e : ds->examples)
      longest = std::max({longest, tasks::example_length(e, ds->feature_dim), (int64_t)e.tokens2.size()});
  s.max_len = (int)longest;
  if (s.classes <= 0) {
    bool scalar_targets = !s.two_tower;
    for (auto* ds : {&d.train, &d.val, &d.test})
      for (auto& e : ds->examples) scalar_targets = scalar_targets && e.target_features.size() == 1 && e.label < 0;
    if (!scalar_targets)
      throw tasks::DataError(d.train.name + ": neither a classification task (num_classes = 0) nor a regression task (one target "
                             "per example)");
    double sum = 0, sq = 0, n = (double)d.train.examples.size();
    for (auto& e : d.train.examples) sum += e.target_features[0];
    s.target_mean = sum / n;
    for (auto& e : d.train.examples) sq += (e.target_features[0] - s.target_mean) * (e.target_features[0] - s.target_mean);
    s.target_scale = n > 1 && sq > 0 ? std::sqrt(sq / (n - 1)) : 1.0;
    s.regression = true, s.classes = 1;
  }
  return s;
}

// The model's inputs from the batch's tensors t. `second` picks tokens2 (the other tower of a retrieval pair).
static Inputs inputs_of(const harness::BatchTensors& t, const tasks::Batch& b, bool second) {
  Inputs in;
  int64_t B = b.batch_size, T = second ? b.seq_len2 : b.seq_len;
  in.mask = second ? t.mask2 : t.mask;
  if (b.feature_dim == 0) {
    in.tokens = second ? t.tokens2 : t.tokens;
  } else {  // continuous: append the (zero) mask channel the masked objective uses
    int64_t F = b.feature_dim;
    in.features = zeros({B, T, F + 1});
    float* o = in.features.data<float>();
    for (int64_t i = 0; i < B * T; i++)
      for (int64_t f = 0; f < F; f++) o[i * (F + 1) + f] = b.features[i * F + f];
  }
  return in;
}

Inputs to_inputs(const tasks::Batch& b, bool second) { return inputs_of(harness::to_tensors(b), b, second); }

Var classify_batch(LraModel& m, const harness::BatchTensors& t, const tasks::Batch& b) {
  Inputs a = inputs_of(t, b, false), a2;
  if (m.shape.two_tower) a2 = inputs_of(t, b, true);
  return m.classify(a, m.shape.two_tower ? &a2 : nullptr);
}

Var classification_loss(LraModel& m, const tasks::Batch& b) {
  const harness::BatchTensors t = harness::to_tensors(b);
  return cross_entropy(classify_batch(m, t, b), t.labels);
}

// The batch's targets standardised with the training split's statistics: (B, 1) on the model's device.
static Tensor standardised_targets(const LraModel& m, const tasks::Batch& b) {
  Tensor y = Tensor::empty({b.batch_size, 1});
  for (int i = 0; i < b.batch_size; i++)
    y.data<float>()[i] = (float)((b.target_features[(size_t)i * b.target_dim] - m.shape.target_mean) / m.shape.target_scale);
  return y;
}

// MSE or L1 (m.cfg.loss) of predictions (B, 1) against the batch's standardised targets.
static Var regression_loss_of(const LraModel& m, const Var& pred, const tasks::Batch& b) {
  if (b.target_dim != 1) fail("regression_loss: a batch of " + std::to_string(b.target_dim) + " targets per example, expected 1");
  Var y(standardised_targets(m, b).to(pred.data().device()));
  return m.cfg.loss == "l1" ? l1_loss(pred, y) : mse_loss(pred, y);
}

Var regression_loss(LraModel& m, const tasks::Batch& b) { return regression_loss_of(m, m.classify(to_inputs(b)), b); }

Var finetune_loss(LraModel& m, const tasks::Batch& b) {
  return m.shape.regression ? regression_loss(m, b) : classification_loss(m, b);
}

// ---------------------------------------------------------------------------------------------
// self-pretraining objectives on a batch (tasks/objectives.h does the per-sequence work)
namespace {

struct PretrainBatch {
  Inputs in;
  Tensor targets;    // tokens: (B, T') i64 with -100 where no loss; continuous: (B, T, F)
  Tensor loss_mask;  // continuous: (B, T, F) 1 where masked
};

PretrainBatch make_pretrain_batch(const tasks::Batch& b, bool second, const std::string& regime, double p, int vocab, int pad_id,
                                  std::mt19937_64& rng) {
  PretrainBatch pb;
  int64_t B = b.batch_size;
  if (b.feature_dim > 0) {  // continuous inputs: masked denoising only ([x (1-m), m], L1 on masked positions)
    if (regime == "spt-causal") fail("spt-causal needs token inputs; use spt-masked for continuous tasks");
    int64_t T = b.seq_len, F = b.feature_dim;
    pb.in.features = Tensor::empty({B, T, F + 1});
    pb.targets = Tensor::empty({B, T, F});
    pb.loss_mask = zeros({B, T, F});
    pb.in.mask = Tensor::empty({B, T});
    for (int64_t i = 0; i < B; i++) {
      std::vector<float> x(b.features.begin() + i * T * F, b.features.begin() + (i + 1) * T * F);
      auto obj = tasks::mask_features(x, (int32_t)F, p, rng);
      std::copy(obj.inputs.begin(), obj.inputs.end(), pb.in.features.data<float>() + i * T * (F + 1));
      std::copy(obj.targets.begin(), obj.targets.end(), pb.targets.data<float>() + i * T * F);
      for (int64_t t = 0; t < T; t++) {
        bool real = b.mask[i * T + t] != 0;
        pb.in.mask.data<float>()[i * T + t] = real;
        for (int64_t f = 0; f < F; f++) pb.loss_mask.data<float>()[(i * T + t) * F + f] = real ? obj.loss_mask[t] : 0.f;
      }
    }
    return pb;
  }
  const auto& tok = second ? b.tokens2 : b.tokens;
  const auto& len = second ? b.lengths2 : b.lengths;
  int64_t T = second ? b.seq_len2 : b.seq_len;
  int64_t To = regime == "spt-causal" ? T - 1 : T;  // causal LM predicts x[1..] from x[..T-2]
  pb.in.tokens = full({B, To}, pad_id, DType::i64);
  pb.targets = full({B, To}, tasks::kIgnoreIndex, DType::i64);
  pb.in.mask = zeros({B, To});
  for (int64_t i = 0; i < B; i++) {
    std::vector<int32_t> x(tok.begin() + i * T, tok.begin() + i * T + len[i]);
    if (x.size() < 2) continue;
    tasks::TokenObjective obj =
        regime == "spt-causal" ? tasks::causal_lm(x, pad_id) : tasks::mask_tokens(x, p, vocab, pad_id, rng);
    for (size_t t = 0; t < obj.inputs.size(); t++) {
      pb.in.tokens.data<int64_t>()[i * To + t] = obj.inputs[t];
      pb.targets.data<int64_t>()[i * To + t] = obj.targets[t];
      pb.in.mask.data<float>()[i * To + t] = 1.f;
    }
  }
  return pb;
}

Var objective_loss(LraModel& m, const PretrainBatch& pb) {
  Var h = m.encode(pb.in);
  Var out = m.pretrain_logits(h);
  if (pb.loss_mask.defined()) return l1_loss(out, Var(pb.targets), Reduction::mean, pb.loss_mask);
  int64_t N = out.size(0) * out.size(1);
  return cross_entropy(reshape(out, {N, out.size(2)}), pb.targets.reshape({N}));
}

}  // namespace

Var pretrain_loss(LraModel& m, const tasks::Batch& b, const CellConfig& c, int pad_id, std::mt19937_64& rng) {
  Var loss = objective_loss(m, make_pretrain_batch(b, false, c.regime, c.mask_prob, m.shape.vocab, pad_id, rng));
  if (m.shape.two_tower)  // both towers see their own corrupted sequence
    loss = (loss + objective_loss(m, make_pretrain_batch(b, true, c.regime, c.mask_prob, m.shape.vocab, pad_id, rng))) * 0.5;
  return loss;
}

// ---------------------------------------------------------------------------------------------
// evaluation over a split, in dataset order
tasks::Batcher in_order(const tasks::Dataset& d, int batch) {
  tasks::BatcherConfig bc;
  bc.batch_size = batch;
  bc.shuffle = false;
  return tasks::Batcher(d, bc);
}

harness::BatchLimits batch_limits(bool pretrain, const LraModel& m, const tasks::Dataset& d) {
  harness::BatchLimits l;
  l.vocab = m.shape.vocab > 0 ? m.shape.vocab + (pretrain ? 0 : 1) : 0;
  l.classes = pretrain || m.shape.regression ? 0 : m.shape.classes, l.positions = m.shape.max_len, l.split = d.name;
  return l;
}

SplitEval evaluate_split(LraModel& m, const tasks::Dataset& d, int batch, int max_batches, harness::Communicator& comm) {
  NoGradGuard ng;
  m.eval();
  tasks::Batcher bt = in_order(d, batch);
  int64_t nb = bt.batches_per_epoch();
  if (max_batches > 0) nb = std::min<int64_t>(nb, max_batches);
  const harness::BatchLimits limits = batch_limits(false, m, d);
  double sums[4] = {0, 0, 0, 0};  // correct, loss x examples, examples (and a regression task's absolute error)
  for (int64_t i = 0; i < nb; i++) {
    tasks::Batch b = bt.next();
    if (i % comm.size() != comm.rank()) continue;  // another rank's batch
    harness::check_batch(b, limits, "evaluation batch " + std::to_string(i));
    if (m.shape.regression) {  // sums: squared error, loss x examples, examples, absolute error (target's units)
      Var pred = m.classify(to_inputs(b));
      Tensor p = pred.data().to(Device::cpu).contiguous();
      for (int j = 0; j < b.batch_size; j++) {
        double err = (p.data<float>()[j] * m.shape.target_scale + m.shape.target_mean) - b.target_features[(size_t)j * b.target_dim];
        sums[0] += err * err, sums[3] += std::abs(err);
      }
      sums[1] += regression_loss_of(m, pred, b).item() * b.batch_size;
      sums[2] += b.batch_size;
      continue;
    }
    const harness::BatchTensors t = harness::to_tensors(b);
    Var logits = classify_batch(m, t, b);  // (B, classes)
    Tensor pred = argmax(logits, 1).to(Device::cpu);  // read on the host (a no-op on the CPU)
    for (int j = 0; j < b.batch_size; j++) sums[0] += pred.data<int64_t>()[j] == b.labels[j];
    sums[1] += cross_entropy(logits, t.labels).item() * b.batch_size;
    sums[2] += b.batch_size;
  }
  comm.allreduce_sum(sums, 4);
  m.train();
  SplitEval r;
  r.examples = (int64_t)sums[2];
  if (r.examples && m.shape.regression) r.rmse = std::sqrt(sums[0] / sums[2]), r.mae = sums[3] / sums[2], r.loss = sums[1] / sums[2];
  else if (r.examples) r.accuracy = sums[0] / sums[2], r.loss = sums[1] / sums[2];
  return r;
}

double pretrain_val_loss(LraModel& m, const tasks::Dataset& d, const CellConfig& c, int max_batches,
                         harness::Communicator& comm) {
  NoGradGuard ng;
  m.eval();
  tasks::Batcher bt = in_order(d, c.batch);
  int64_t nb = std::min<int64_t>(bt.batches_per_epoch(), std::max(1, max_batches));
  const harness::BatchLimits limits = batch_limits(true, m, d);
  std::mt19937_64 rng(12345);  // fixed corruption so validation losses are comparable across evaluations
  double sums[2] = {0, 0};     // losses, batches
  for (int64_t i = 0; i < nb; i++) {
    tasks::Batch b = bt.next();
    harness::check_batch(b, limits, "pretraining evaluation batch " + std::to_string(i));
    PretrainBatch pb =
        make_pretrain_batch(b, false, c.regime, c.mask_prob, m.shape.vocab, d.pad_id, rng);  // every rank draws alike
    if (i % comm.size() != comm.rank()) continue;
    sums[0] += objective_loss(m, pb).item(), sums[1] += 1;
  }
  comm.allreduce_sum(sums, 2);
  m.train();
  return sums[0] / sums[1];
}

}  // namespace lra
