// apps/pretrained_convs/data.h - the text-to-text fine-tuning tasks and the span-corruption pretraining data.
//
// Every task is text to text on bytes (tasks/tokenizer.h ByteTokenizer: pad 0, eos 1, byte b -> b + 5, then the
// sentinels): the encoder reads the input text's bytes and eos, the decoder writes the label as a word and eos
// ("positive", "fiction"), as T5 does; a decoded output that is no label's word counts as wrong. Example.tokens is
// the input, Example.tokens2 the target, Example.label the class (-1 for sequence outputs).
//
// The paper's data sets (Civil Comments, Wiki Toxic, IMDb, SST-2, Sentiment140, TREC, AGNews, COGS) cannot be
// downloaded here; the embedded tasks are stand-ins, each named for what it is and what it measures:
//   sentiment      the UCI "Sentiment Labelled Sentences" (Kotzias et al. 2015: 1000 Amazon, IMDb and Yelp review
//                  sentences each, half positive), shipped in npm `sentiment@5.0.2` (test/fixtures/*.json, each ending with an empty item that is skipped); stands
//                  in for IMDb / SST-2 / Sentiment140: sentence-level sentiment
//   topic          Brown corpus genres in 5 classes (tasks/text_classification.h brown_genre, chunks of max_src
//                  bytes, split by document); stands in for AGNews: topic of a passage
//   questions      generated questions in TREC's six coarse answer types (abbreviation, description, entity, human,
//                  location, number) from templates and word lists written here; stands in for TREC: what a
//                  question asks for, where the wh-word alone does not decide ("what" opens every class); the
//                  templates give 626 distinct questions (65 abbreviation .. 199 number), split 70/10/20
//   compositional  a SCAN-like command language (Lake & Baroni 2018): "jump around left twice and walk" ->
//                  "<J<J<J<J<J<J<J<JW" (W R L J = walk run look jump, < > = turn left / right). The out-of-
//                  distribution test holds every command that uses "jump" with "around right", a combination
//                  never seen in training although both parts are; stands in for COGS: compositional
//                  generalisation, by exact sequence accuracy
//   pair_edit      two Brown sentences joined by a separator: B repeats A exactly ("same") or with one word
//                  replaced by another word of the corpus ("edited"); split by document. Stands in for MultiNLI
//                  / paraphrase: a task that can only be solved by relating the two sequences
//   (topic and pair_edit are cut from Brown documents, which the pretraining text also holds, test documents
//   included: their pretrained cells are transductive - the text, never the labels, was seen)
//   textfile       a user's own data: data_path holds train.tsv and test.tsv ("label<TAB>text" lines) or train.csv
//                  and test.csv (a header naming columns "text" and "label"; RFC 4180 quoting); val is carved from
//                  train; labels are the label column's words
//   imdb           the official aclImdb/ folders (tasks/text.h read_imdb_split) at data_path; labels negative /
//                  positive
// Input texts are cut to max_src bytes (counting eos). A split capped by train_size / val_size / test_size (or by a
// task's default cap) keeps examples spread evenly over the whole split (spread_indices), not its first ones.
#pragma once
#include <string>
#include <vector>

#include "config.h"
#include "tasks/dataset.h"
#include "tasks/text.h"

namespace pconv {

inline constexpr int32_t kSeparator = 3;  // ByteTokenizer's bos id, between the two sentences of a pair
inline constexpr int32_t kSentinels = 64;
int32_t vocab_size();  // 261 + kSentinels

struct Seq2SeqTask {
  std::string name;
  dl::tasks::TaskData data;
  dl::tasks::Dataset ood_test;           // compositional: the held-out combinations (empty otherwise)
  std::vector<std::string> class_names;  // the label words (empty for sequence outputs)
  bool pair = false;                     // inputs are "A <sep> B"
  int32_t max_target = 0;                // longest target in tokens (with eos)
};

// The task of a cell, built once per process and configuration and cached.
const Seq2SeqTask& seq2seq_task(const CellConfig& c);

// ---- pieces, exposed for tests ----
std::vector<int32_t> encode_text(const std::string& text, int32_t max_len);  // bytes + eos, cut to max_len
// A model input as the task's examples are made: encode_text, or for a pair task "A\x01B" as A's and B's bytes (each
// cut to (max_src - 2) / 2), the separator between them and eos.
std::vector<int32_t> encode_input(const std::string& text, bool pair, int32_t max_src);
std::string decode_bytes(const std::vector<int32_t>& ids);                   // up to the first eos; specials dropped
// Which of n examples a split capped at `cap` keeps (cap 0 or >= n: all): cap indices spread evenly over the
// whole list. The splits list their examples document by document (topic's chunks, pair_edit's sentences), so the
// first `cap` would be the first few documents (1000 of topic's ~9600 test chunks are about 10 of its 100 test
// documents); an even spread keeps every document and every class in its share.
std::vector<size_t> spread_indices(size_t n, size_t cap);
// The class whose word `decoded` is, or -1 (the output is not a label).
int32_t decode_label(const std::string& decoded, const std::vector<std::string>& class_names);
// Text-label pairs from a TSV or CSV file (see above), naming the file and line of anything malformed.
std::vector<dl::tasks::LabeledText> read_text_label_file(const std::string& path);
// The compositional grammar: a command and its actions; a command set with the held-out split.
std::string scan_actions(const std::string& command);  // throws DataError on a command outside the grammar
struct ScanSplit {
  std::vector<std::string> train, test, ood;
};
ScanSplit scan_commands(int train_size, int test_size, int ood_size, uint64_t seed);
bool scan_is_held_out(const std::string& command);  // uses "jump ... around right" in one phrase

// Span-corruption examples (inputs, targets) from windows of `len` bytes of packaged English text, split 95/5.
struct PretrainData {
  dl::tasks::Dataset train, val;
};
PretrainData span_corruption_data(int len, double density, double mean_span, int max_windows, uint64_t seed);

}  // namespace pconv
