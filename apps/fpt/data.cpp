// apps/fpt/data.cpp - see data.h.
#include "data.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "apps/common/batch_tensors.h"
#include "tasks/bits.h"
#include "tasks/digits.h"
#include "tasks/homology.h"
#include "tasks/registry.h"

namespace fpt {

using namespace dl;

static FptTask make(const CellConfig& c) {
  FptTask t;
  auto sizes = [&](int64_t tr, int64_t va, int64_t te) {
    return std::tuple{c.train_size ? c.train_size : tr, c.val_size ? c.val_size : va, c.test_size ? c.test_size : te};
  };
  if (c.task == "bit_xor" || c.task == "bit_memory") {
    const bool xor_task = c.task == "bit_xor";
    const int64_t n = c.bits ? c.bits : xor_task ? 5 : 1000, P = c.patterns ? c.patterns : xor_task ? 2 : 5;
    t.patch = c.patch ? c.patch : xor_task ? 1 : 50;
    if (n % t.patch)
      throw ConfigError(c.key() + ": patch " + std::to_string(t.patch) + " does not divide bits " + std::to_string(n));
    auto [tr, va, te] = sizes(20000, 1000, 1000);
    auto split = [&](int64_t count, uint64_t salt, const std::string& name) {
      if (xor_task) return tasks::make_bit_xor({(int32_t)n, (int32_t)P}, count, c.seed * 1000 + salt, name);
      tasks::BitMemoryConfig bc;
      bc.num_patterns = (int32_t)P, bc.num_bits = (int32_t)n, bc.bits_per_token = (int32_t)t.patch;
      return tasks::make_bit_memory(bc, count, c.seed * 1000 + salt, name);
    };
    t.data = {split(tr, 1, c.task + "/train"), split(va, 2, c.task + "/val"), split(te, 3, c.task + "/test")};
    t.bits = true, t.features = t.patch, t.readout = n / t.patch, t.outputs = 2 * t.patch;
    t.max_len = (xor_task ? P : P + 1) * n / t.patch;
    return t;
  }
  if (c.task == "digits") {  // the fixed split of the 1797 images; sizes cap each split
    tasks::DigitsConfig dc;
    dc.path = c.data_path, dc.patch = c.patch ? c.patch : 2;
    dc.max_train = c.train_size, dc.max_val = c.val_size, dc.max_test = c.test_size;
    t.data = tasks::make_digits(dc);
  } else if (c.task == "homology") {  // sequences sampled from the families' profile HMMs, per seed
    tasks::HomologyConfig hc;
    hc.path = c.data_path, hc.window = c.seq_len ? c.seq_len : 64, hc.seed = (uint64_t)c.seed;
    for (size_t a = 0; a < c.families.size();) {
      size_t b = std::min(c.families.find(',', a), c.families.size());
      if (b > a) hc.families.push_back(c.families.substr(a, b - a));
      a = b + 1;
    }
    auto [tr, va, te] = sizes(hc.train_size, hc.val_size, hc.test_size);
    hc.train_size = tr, hc.val_size = va, hc.test_size = te;
    t.data = tasks::make_homology(hc);
  } else {
    auto [tr, va, te] = sizes(c.task == "listops" ? 20000 : 0, c.task == "listops" ? 1000 : 0, c.task == "listops" ? 1000 : 0);
    int32_t len = c.seq_len ? c.seq_len : c.task == "listops" ? 512 : 0;
    t.data = tasks::make_task(c.task, {len, tr, va, te, (uint64_t)c.seed, c.data_path});
  }
  const tasks::Dataset& d = t.data.train;
  t.vocab = d.feature_dim ? 0 : d.vocab_size, t.features = d.feature_dim, t.outputs = d.num_classes;
  for (auto* s : {&t.data.train, &t.data.val, &t.data.test})
    for (auto& e : s->examples) t.max_len = std::max<int64_t>(t.max_len, tasks::example_length(e, s->feature_dim));
  if (t.outputs < 2) throw ConfigError(c.key() + ": not a classification task (" + std::to_string(t.outputs) + " classes)");
  return t;
}

const FptTask& fpt_task(const CellConfig& c) {
  static std::map<std::string, std::unique_ptr<FptTask>> cache;
  static std::mutex mu;
  std::string key = c.task + "|" + std::to_string(c.train_size) + "|" + std::to_string(c.val_size) + "|" +
                    std::to_string(c.test_size) + "|" + std::to_string(c.bits) + "|" + std::to_string(c.patterns) + "|" +
                    std::to_string(c.patch) + "|" + std::to_string(c.seq_len) + "|" + std::to_string(c.seed) + "|" + c.data_path + "|" + c.families;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[key];
  if (!slot) slot = std::make_unique<FptTask>(make(c));
  return *slot;
}

FptBatch to_batch(const FptTask& t, const tasks::Batch& b) {
  FptBatch out;
  const int64_t B = b.batch_size;
  harness::BatchTensors in = harness::to_tensors(b);
  if (t.bits) {  // (B, T0, F0) -> (B, T0 F0 / patch, patch); every position real; per-bit classes
    const int64_t total = (int64_t)b.seq_len * b.feature_dim, T = total / t.patch, n = b.target_dim;
    out.features = in.features.view({B, T, t.patch});
    out.mask = ones({B, T});
    out.targets = Tensor::empty({B, n}, DType::i64);
    for (int64_t i = 0; i < B * n; i++) out.targets.data<int64_t>()[i] = b.target_features[i] > 0.5f;  // +-1 and 0/1 alike
    return out;
  }
  out.tokens = in.tokens, out.features = in.features, out.mask = in.mask, out.targets = in.labels;
  return out;
}

}  // namespace fpt
