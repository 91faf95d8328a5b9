// tasks/retrieval.h - the LRA "Retrieval" task: does a pair of byte sequences come from the same document?
//
// What it is.
//  - LRA Retrieval (Tay et al. 2021, sec. 3.4) classifies pairs of ACL Anthology papers (AAN, Radev et al.
//    2013) as citation-linked or not, on raw bytes of up to 4K each, with a two-tower model: each text is
//    encoded on its own and the two encodings are combined, which is why an Example has tokens and tokens2.
//  - The embedded default builds pairs from Brown documents: label 1 ("same") = two non-overlapping chunks of
//    one document; label 0 ("different") = one chunk each from two different documents of the SAME fine genre
//    (of the 15), so topic and register alone cannot tell the classes apart. Every split is exactly balanced
//    (the first half of the pairs positive, then shuffled). Documents are split by document first
//    (split_by_document, stratified by genre), so no document gives chunks to two splits.
//  - Chunk length: `chunk_len` bytes (default 2000), reduced to half the document when the document is
//    shorter than two chunks.
//  - The AAN loader for the official `new_aan_pairs.{train,eval,test}.tsv`: no header, 5 tab-separated
//    columns label, id1, id2, text1, text2 (LRA reads them with quoting off, so a quote is a plain byte);
//    label "0"/"1" (LRA stores floats, so "0.0"/"1.0" too). Like LRA, each text is cut to 10000 bytes before
//    encoding and the tokens to max_len (4000).
//
// What it is not: a citation-graph builder; the AAN files must come from the LRA release.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tasks/dataset.h"
#include "tasks/text.h"

namespace dl::tasks {

struct RetrievalConfig {
  uint64_t seed = 0;
  int32_t chunk_len = 2000;  // bytes per side (LRA AAN: up to 4000)
  int64_t num_train = 8000;  // pairs, made even by rounding down
  int64_t num_val = 1000;
  int64_t num_test = 1000;
  double val_frac = 0.1;  // of documents
  double test_frac = 0.1;
  std::string brown_dir;  // empty: the npm package in the data cache
};

// `count` balanced pairs from `docs` (LabeledText::group = fine genre). `name` is used in error messages.
// Throws DataError when no genre has two documents (negatives impossible) or a document is empty.
std::vector<Example> make_retrieval_pairs(const std::vector<LabeledText>& docs, int64_t count, int32_t chunk_len,
                                          std::mt19937_64& rng, const std::string& name);

// Pairs built from already-split documents, and the Brown default.
TaskData make_retrieval_from_docs(const TextSplits& docs, const RetrievalConfig& config);
TaskData make_retrieval(const RetrievalConfig& config);

// ---- AAN, official format ------------------------------------------------------------------------
struct AanPair {
  int32_t label = 0;
  std::string id1, id2, text1, text2;
};
// Bad column count or label -> DataError "file:line: ..."; \r\n accepted; blank lines are skipped.
std::vector<AanPair> parse_aan_tsv(std::string_view content, const std::string& file_name);
std::vector<AanPair> read_aan_tsv(const std::string& path);
void write_aan_tsv(const std::string& path, const std::vector<AanPair>& pairs);  // for tests and tools
// new_aan_pairs.{train,eval,test}.tsv of `dir` -> train, val, test.
TaskData load_aan(const std::string& dir, int32_t max_len = 4000);

}  // namespace dl::tasks
