// tasks/batching.cpp - shuffling, padding, bucketing, prefetching and resumable positions (see batching.h).
//
// Determinism: the only randomness is rng_ (std::mt19937_64 seeded with config.seed), drawn with rng()
// itself rather than std:: distributions, whose algorithms differ between standard libraries. Each epoch
// draws its whole order up front, so "the rng state before the epoch" plus "the batch index" pin down
// every later batch; that pair (and the epoch number) is the DataPosition.
#include "tasks/batching.h"

#include <algorithm>
#include <numeric>
#include <sstream>

namespace dl::tasks {
namespace {

int64_t uniform_index(std::mt19937_64& rng, int64_t n) { return static_cast<int64_t>(rng() % uint64_t(n)); }

template <class T> void fisher_yates(std::vector<T>& v, std::mt19937_64& rng) {
  for (int64_t i = int64_t(v.size()) - 1; i > 0; --i) std::swap(v[size_t(i)], v[size_t(uniform_index(rng, i + 1))]);
}

std::string rng_to_string(const std::mt19937_64& rng) {
  std::ostringstream out;
  out << rng;
  return out.str();
}

}  // namespace

int64_t example_length(const Example& example, int32_t feature_dim) {
  if (feature_dim > 0) return int64_t(example.features.size()) / feature_dim;
  return int64_t(example.tokens.size());
}

// ---- DataPosition --------------------------------------------------------------------------

std::string DataPosition::to_string() const { return std::to_string(epoch) + " " + std::to_string(index) + " " + rng_state; }

DataPosition DataPosition::from_string(const std::string& text) {
  std::istringstream in(text);
  DataPosition p;
  if (!(in >> p.epoch >> p.index) || p.epoch < 0 || p.index < 0)
    throw DataError("DataPosition: expected \"<epoch> <index> <rng state>\", found \"" + text.substr(0, 60) + "\"");
  in >> std::ws;
  std::getline(in, p.rng_state);
  std::istringstream check(p.rng_state);
  std::mt19937_64 rng;
  if (!(check >> rng))
    throw DataError("DataPosition: the rng state after \"" + std::to_string(p.epoch) + " " + std::to_string(p.index) +
                    "\" is not a std::mt19937_64 state (312 words + position)");
  return p;
}

// ---- Batcher -------------------------------------------------------------------------------

Batcher::Batcher(const Dataset& data, BatcherConfig config) : data_(data), config_(config), rng_(config.seed) {
  if (config_.batch_size <= 0)
    throw DataError("Batcher(" + data_.name + "): batch_size must be > 0, found " + std::to_string(config_.batch_size));
  if (data_.examples.empty()) throw DataError("Batcher(" + data_.name + "): the dataset has no examples");
  if (config_.drop_last && int64_t(data_.examples.size()) < config_.batch_size)
    throw DataError(data_.name + ": " + std::to_string(data_.examples.size()) + " example" +
                    (data_.examples.size() == 1 ? "" : "s") + ", fewer than one batch of " +
                    std::to_string(config_.batch_size) + " (training drops a last partial batch): a smaller batch or more data");
  start_epoch(cursor_);
  consumed_ = {cursor_.epoch, cursor_.index, cursor_.epoch_rng_state};
  if (config_.prefetch > 0) start_thread();
}

Batcher::~Batcher() { stop_thread(); }

int64_t Batcher::batches_per_epoch() const {
  const int64_t n = int64_t(data_.examples.size()), b = config_.batch_size;
  return config_.drop_last ? n / b : (n + b - 1) / b;
}

void Batcher::start_epoch(Cursor& cursor) {
  cursor.epoch_rng_state = rng_to_string(rng_);
  cursor.index = 0;
  std::vector<int64_t> perm(data_.examples.size());
  std::iota(perm.begin(), perm.end(), 0);
  if (config_.shuffle) fisher_yates(perm, rng_);

  const size_t B = size_t(config_.batch_size);
  if (config_.bucket_batches > 1) {
    // Length bucketing: inside each window of k batches, sort by length so a batch holds similar lengths
    // and wastes little padding; windows keep the epoch random at the large scale.
    const size_t window = B * size_t(config_.bucket_batches);
    for (size_t w = 0; w < perm.size(); w += window) {
      auto first = perm.begin() + w, last = perm.begin() + std::min(perm.size(), w + window);
      std::stable_sort(first, last, [&](int64_t a, int64_t b) {
        return example_length(data_.examples[a], data_.feature_dim) < example_length(data_.examples[b], data_.feature_dim);
      });
    }
  }
  cursor.order.clear();
  for (size_t i = 0; i < perm.size(); i += B) {
    if (config_.drop_last && i + B > perm.size()) break;
    cursor.order.emplace_back(perm.begin() + i, perm.begin() + std::min(perm.size(), i + B));
  }
  // Sorted windows would otherwise give short-to-long batches within each window: shuffle batch order.
  if (config_.bucket_batches > 1 && config_.shuffle) fisher_yates(cursor.order, rng_);
}

Batch Batcher::produce(Cursor& cursor, DataPosition& after) {
  Batch batch = collate(cursor.order[size_t(cursor.index)]);
  batch.epoch = cursor.epoch;
  batch.index_in_epoch = cursor.index;
  if (++cursor.index == int64_t(cursor.order.size())) {
    ++cursor.epoch;
    start_epoch(cursor);  // draw the next order now so `after` carries the next epoch's rng state
  }
  after = {cursor.epoch, cursor.index, cursor.epoch_rng_state};
  return batch;
}

Batch Batcher::next() {
  if (config_.prefetch <= 0) return produce(cursor_, consumed_);
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return !queue_.empty(); });
  // A failed item stays at the front, so every later call rethrows instead of waiting forever.
  if (queue_.front().error) std::rethrow_exception(queue_.front().error);
  Item item = std::move(queue_.front());
  queue_.pop_front();
  lock.unlock();
  cv_.notify_all();
  consumed_ = item.after;
  return std::move(item.batch);
}

DataPosition Batcher::position() const { return consumed_; }

void Batcher::set_position(const DataPosition& position) {
  stop_thread();
  std::istringstream in(position.rng_state);
  if (!(in >> rng_)) throw DataError("Batcher(" + data_.name + ")::set_position: rng_state is not a std::mt19937_64 state");
  cursor_.epoch = position.epoch;
  start_epoch(cursor_);
  if (position.index >= int64_t(cursor_.order.size()))
    throw DataError("Batcher(" + data_.name + ")::set_position: batch index " + std::to_string(position.index) + " is past the " +
                    std::to_string(cursor_.order.size()) +
                    " batches of an epoch (dataset or batch size changed since the position was saved?)");
  cursor_.index = position.index;
  consumed_ = position;
  if (config_.prefetch > 0) start_thread();
}

// ---- prefetch thread -----------------------------------------------------------------------

void Batcher::start_thread() {
  stop_ = false;
  queue_.clear();
  thread_ = std::thread([this] { producer_loop(); });
}

void Batcher::stop_thread() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  // Prefetched but unconsumed batches are discarded; the producer cursor is rewound to what the
  // consumer has seen so a later start_thread (or a synchronous next) continues from there.
  queue_.clear();
  std::istringstream in(consumed_.rng_state);
  in >> rng_;
  cursor_.epoch = consumed_.epoch;
  start_epoch(cursor_);
  cursor_.index = consumed_.index;
}

void Batcher::producer_loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || int32_t(queue_.size()) < config_.prefetch; });
      if (stop_) return;
    }
    Item item;
    try {
      item.batch = produce(cursor_, item.after);
    } catch (...) {
      item.error = std::current_exception();
    }
    const bool failed = bool(item.error);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(item));
    }
    cv_.notify_all();
    if (failed) return;  // the consumer rethrows; producing more after an error would hide it
  }
}

// ---- collation -----------------------------------------------------------------------------

Batch Batcher::collate(const std::vector<int64_t>& indices) const {
  Batch b;
  const int32_t B = int32_t(indices.size());
  const int32_t F = data_.feature_dim;
  b.batch_size = B;
  b.indices = indices;
  auto where = [&](int64_t i) { return data_.name + " example " + std::to_string(i); };

  // Lengths: clip to fixed_len when truncating, reject longer ones otherwise.
  auto clip = [&](int64_t i, int64_t len, const char* what) -> int32_t {
    if (config_.fixed_len > 0 && len > config_.fixed_len) {
      if (!config_.truncate)
        throw DataError("Batcher: " + where(i) + " has " + what + " length " + std::to_string(len) + " > fixed_len " +
                        std::to_string(config_.fixed_len) + " (enable truncate to cut it)");
      return config_.fixed_len;
    }
    return int32_t(len);
  };
  bool has2 = false;
  for (int64_t i : indices) {
    const Example& e = data_.examples[size_t(i)];
    if (F > 0 && e.features.size() % size_t(F) != 0)
      throw DataError("Batcher: " + where(i) + " has " + std::to_string(e.features.size()) +
                      " feature values, not a multiple of feature_dim " + std::to_string(F));
    b.lengths.push_back(clip(i, example_length(e, F), "sequence"));
    b.lengths2.push_back(clip(i, int64_t(e.tokens2.size()), "tokens2"));
    has2 = has2 || !e.tokens2.empty();
    b.labels.push_back(e.label);
  }
  const int32_t longest = B ? *std::max_element(b.lengths.begin(), b.lengths.end()) : 0;
  const int32_t longest2 = B ? *std::max_element(b.lengths2.begin(), b.lengths2.end()) : 0;
  b.seq_len = config_.fixed_len > 0 ? config_.fixed_len : longest;
  const int32_t T = b.seq_len;
  b.mask.assign(size_t(B) * T, 0);
  if (F > 0) {
    b.feature_dim = F;
    b.features.assign(size_t(B) * T * F, 0.0f);  // (B, T, F)
  } else {
    b.tokens.assign(size_t(B) * T, data_.pad_id);  // (B, T)
  }
  if (has2) {
    b.seq_len2 = config_.fixed_len > 0 ? config_.fixed_len : longest2;
    b.tokens2.assign(size_t(B) * b.seq_len2, data_.pad_id);  // (B, T2)
    b.mask2.assign(size_t(B) * b.seq_len2, 0);
  } else {
    b.lengths2.clear();
  }
  for (int32_t r = 0; r < B; ++r) {
    const Example& e = data_.examples[size_t(indices[r])];
    const int32_t len = b.lengths[r];
    std::fill_n(b.mask.begin() + size_t(r) * T, len, 1);
    if (F > 0) std::copy_n(e.features.begin(), size_t(len) * F, b.features.begin() + size_t(r) * T * F);
    else std::copy_n(e.tokens.begin(), len, b.tokens.begin() + size_t(r) * T);
    if (has2) {
      const int32_t len2 = b.lengths2[r];
      std::copy_n(e.tokens2.begin(), len2, b.tokens2.begin() + size_t(r) * b.seq_len2);
      std::fill_n(b.mask2.begin() + size_t(r) * b.seq_len2, len2, 1);
    }
  }
  // Continuous targets (bit memory/XOR): all examples of a task share one target size D.
  if (B > 0 && !data_.examples[size_t(indices[0])].target_features.empty()) {
    b.target_dim = int32_t(data_.examples[size_t(indices[0])].target_features.size());
    for (int64_t i : indices) {
      const auto& t = data_.examples[size_t(i)].target_features;
      if (int32_t(t.size()) != b.target_dim)
        throw DataError("Batcher: " + where(i) + " has " + std::to_string(t.size()) + " target_features, expected " +
                        std::to_string(b.target_dim) + " like example " + std::to_string(indices[0]));
      b.target_features.insert(b.target_features.end(), t.begin(), t.end());  // (B, D)
    }
  }
  return b;
}

Batch slice_rows(const Batch& b, int32_t begin, int32_t count) {
  if (begin < 0 || count < 0 || begin + count > b.batch_size)
    throw DataError("slice_rows: rows [" + std::to_string(begin) + ", " + std::to_string(begin + count) + ") of a batch of " +
                    std::to_string(b.batch_size));
  auto rows = [&](const auto& v, int64_t per_row) {  // the rows' span of a (B, per_row) buffer
    using V = std::decay_t<decltype(v)>;
    return v.empty() ? V{} : V(v.begin() + begin * per_row, v.begin() + (begin + count) * per_row);
  };
  Batch s = b;
  s.batch_size = count;
  s.tokens = rows(b.tokens, b.seq_len), s.mask = rows(b.mask, b.seq_len), s.lengths = rows(b.lengths, 1);
  s.tokens2 = rows(b.tokens2, b.seq_len2), s.mask2 = rows(b.mask2, b.seq_len2), s.lengths2 = rows(b.lengths2, 1);
  s.features = rows(b.features, (int64_t)b.seq_len * b.feature_dim);
  s.target_features = rows(b.target_features, b.target_dim);
  s.labels = rows(b.labels, 1), s.indices = rows(b.indices, 1);
  return s;
}

}  // namespace dl::tasks
