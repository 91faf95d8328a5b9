// tasks/tokenizer.h - the tokenizers shared by the text tasks: bytes, characters, and a small byte-level BPE.
//
// What it is: three plain string <-> id mappings. All three share ONE layout of special ids so a model
// trained on one byte-level task can be fine-tuned on another without remapping:
//
//     0 pad    1 eos    2 unk    3 bos    4 mask    5..260 the 256 byte values (id = byte + 5)
//
// pad = 0 matches LRA (tfds ByteTextEncoder pads with 0) and T5; eos = 1 and unk = 2 follow T5/ByT5.
// ByteTokenizer then places `num_sentinels` T5 span-corruption sentinels AFTER the bytes:
// sentinel i has id 261 + i (so <extra_id_0> = 261). Placing them after the bytes keeps every byte's id
// independent of how many sentinels a run asks for. BPE puts its learned merges after the bytes (261+).
//
// What it is not: a word-level vocabulary builder (ListOps has its own fixed vocabulary in listops.h) and
// not a Unicode normaliser: bytes are bytes.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dl::tasks {

// The special ids common to every tokenizer in this file.
namespace special_ids {
inline constexpr int32_t pad = 0;
inline constexpr int32_t eos = 1;
inline constexpr int32_t unk = 2;
inline constexpr int32_t bos = 3;
inline constexpr int32_t mask = 4;
inline constexpr int32_t count = 5;  // first non-special id
}  // namespace special_ids

// Byte tokenizer: id = byte + 5, vocabulary 261 + num_sentinels.
struct ByteTokenizer {
  static constexpr int32_t byte_offset = special_ids::count;
  int32_t num_sentinels = 0;  // T5 span corruption uses up to 100 (<extra_id_0> .. <extra_id_99>)

  int32_t vocab_size() const { return byte_offset + 256 + num_sentinels; }
  int32_t sentinel_id(int32_t i) const;  // throws DataError when i is not in [0, num_sentinels)
  std::vector<int32_t> encode(std::string_view text) const;
  // Specials are dropped, except sentinels and mask which are written as "<extra_id_N>" and "<mask>"
  // so a corrupted sequence can be read; ids outside the vocabulary throw DataError.
  std::string decode(const std::vector<int32_t>& ids) const;
};

// Character tokenizer over UTF-8 code points seen in a training text (sorted by code point, so the same
// text always gives the same ids). Unknown characters and malformed UTF-8 bytes map to unk.
class CharTokenizer {
 public:
  static CharTokenizer train(std::string_view text);
  int32_t vocab_size() const { return special_ids::count + static_cast<int32_t>(chars_.size()); }
  std::vector<int32_t> encode(std::string_view text) const;
  std::string decode(const std::vector<int32_t>& ids) const;
  const std::vector<char32_t>& chars() const { return chars_; }

 private:
  std::vector<char32_t> chars_;  // id = special_ids::count + index
  std::map<char32_t, int32_t> char_to_id_;
};

// Byte-level BPE (Sennrich et al. 2016, byte variant as in GPT-2): start from the 256 byte tokens, then
// repeatedly merge the most frequent adjacent pair inside words. "Words" are pre-split so merges never
// cross them: a word is an optional single leading space followed by a run of letters, or of digits, or
// of other non-space bytes; whitespace runs are their own words. Ties between equally frequent pairs go to
// the pair with the smaller ids, so training is deterministic.
class BpeTokenizer {
 public:
  static BpeTokenizer train(std::string_view text, int32_t num_merges);
  int32_t vocab_size() const { return special_ids::count + 256 + static_cast<int32_t>(merges_.size()); }
  std::vector<int32_t> encode(std::string_view text) const;
  std::string decode(const std::vector<int32_t>& ids) const;  // specials are dropped
  const std::vector<std::pair<int32_t, int32_t>>& merges() const { return merges_; }

  // JSON file: {"type": "byte_bpe", "version": 1, "special_count": 5, "merges": [[a, b], ...]}.
  void save(const std::string& path) const;
  static BpeTokenizer load(const std::string& path);  // throws DataError naming the file and the problem
  static BpeTokenizer parse(std::string_view json_text, const std::string& path);  // the same from the file's text

 private:
  void rebuild_tables();  // bytes of every token and the merge ranks, from merges_
  std::vector<int32_t> encode_word(std::string_view word) const;

  std::vector<std::pair<int32_t, int32_t>> merges_;      // merge i creates id 261 + i
  std::map<std::pair<int32_t, int32_t>, int32_t> rank_;  // pair -> merge index
  std::vector<std::string> token_bytes_;                 // id -> bytes ("" for specials)
};

// Splits text into the words BPE trains and encodes on (see BpeTokenizer); concatenating them gives text back.
std::vector<std::string_view> bpe_pre_split(std::string_view text);

}  // namespace dl::tasks
