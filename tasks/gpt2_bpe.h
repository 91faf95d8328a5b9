// tasks/gpt2_bpe.h - GPT-2's byte-level BPE tokenizer (Radford et al. 2019), read from Hugging Face's `vocab.json` +
// `merges.txt`, so that a released GPT-2 (or any model trained with these files) gets the ids it was trained on.
//
// Encoding, as OpenAI's encoder.py does it:
//   1. pre-split the text into pieces with GPT-2's pattern, tried in this order at each position:
//        's | 't | 're | 've | 'm | 'll | 'd | ' '?\p{L}+ | ' '?\p{N}+ | ' '?[^\s\p{L}\p{N}]+ | \s+(?!\S) | \s+
//      (contractions are lower case only; the optional prefix is the one character U+0020; \s+(?!\S) takes a run of
//      white space but leaves its last character to the next piece when a non-space follows, so " world" keeps its
//      space). Merges never cross pieces.
//   2. write each piece's UTF-8 bytes as characters of bytes_to_unicode: the 188 printable bytes stand for themselves
//      ('!'..'~', '¡'..'¬', '®'..'ÿ'), the other 68 (controls, space, ...) get U+0100, U+0101, ... in byte order -
//      so a space is 'Ġ' (U+0120) and a newline 'Ċ' (U+010A) in vocab.json.
//   3. start from one token per byte and repeatedly merge the adjacent pair of lowest rank (its line in merges.txt),
//      every occurrence left to right, until no adjacent pair is ranked; each token's id is its vocab.json entry.
// Decoding concatenates the tokens' bytes. Every byte has a token, so decode(encode(bytes)) == bytes for ANY bytes.
//
// Deliberate choices, where encoder.py (which takes a Python str) has no answer:
//   - the text is UTF-8 bytes; a byte that does not start a valid UTF-8 sequence (a stray continuation byte, an
//     overlong form, a surrogate, a code point past U+10FFFF, a truncated sequence) is one character of the class
//     "other" ([^\s\p{L}\p{N}]), so it joins punctuation runs and still round-trips.
//   - "<|endoftext|>" in the text is encoded as its characters, as encoder.py does (no special-token splitting).
// What is approximated: nothing in the splitting rules; the classes \p{L}, \p{N} and \s are tables of the regex module's
// ranges (tasks/gpt2_bpe_unicode.cpp, written by tests/fixtures/gpt2_bpe/make_fixtures.py), so a character assigned
// by a later Unicode version than that module knows is "other" here.
//
// The files are outside bytes and read strictly; each problem is a DataError naming the file, the line (merges.txt) or
// the entry (vocab.json, one line in HF's files) and what was expected against what was found:
//   vocab.json  a JSON object {token: id}; ids are integers 0 .. n-1, each once (no duplicate, no gap); a key appears
//               once; every token is a non-empty string of bytes_to_unicode characters; the 256 one-byte tokens exist;
//               no byte order mark.
//   merges.txt  an optional "#version: ..." first line (HF writes "#version: 0.2"); then one merge a line, "A B": two
//               tokens of the vocabulary separated by one space, whose concatenation is in the vocabulary too, each
//               pair once; lines end in LF (a CR LF line end is named: the CR would otherwise become part of a token);
//               an empty line only at the end; no byte order mark.
// What it is not: a trainer (tasks/tokenizer.h's BpeTokenizer trains the project's own), a normaliser, or a reader of
// HF's single-file tokenizer.json (tasks/gpt2_tokenizer_json.h reads one into a Gpt2Bpe).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dl::tasks {

// The classes GPT-2's pattern distinguishes (tasks/gpt2_bpe_unicode.cpp).
enum class CharClass { letter, number, space, other };
CharClass gpt2_char_class(char32_t c);

// bytes_to_unicode: the character that stands for byte b in vocab.json and merges.txt, and its inverse (-1 when the
// code point stands for no byte).
char32_t gpt2_byte_char(unsigned char b);
int gpt2_char_byte(char32_t c);

// Step 1 above: the pieces of `text`, in order; concatenated they give `text` back.
std::vector<std::string_view> gpt2_pre_split(std::string_view text);

class Gpt2Bpe {
 public:
  // Reads the two files; DataError naming the file and what is wrong.
  static Gpt2Bpe load(const std::string& vocab_path, const std::string& merges_path);
  // The same from the files' contents; the names are used in messages.
  static Gpt2Bpe parse(std::string_view vocab_json, std::string_view merges_txt, const std::string& vocab_name = "vocab.json",
                       const std::string& merges_name = "merges.txt");

  int32_t vocab_size() const { return (int32_t)token_bytes_.size(); }
  int32_t num_merges() const { return (int32_t)merge_rank_.size(); }
  std::vector<int32_t> encode(std::string_view text) const;
  // ids outside [0, vocab_size) are a DataError naming the position.
  std::string decode(const std::vector<int32_t>& ids) const;
  // One token's bytes (a streaming decoder prints these as they come: they may end inside a UTF-8 character).
  const std::string& token_bytes(int32_t id) const;
  // The id of a vocab.json key (e.g. "<|endoftext|>"), if present.
  std::optional<int32_t> find(const std::string& token) const;

 private:
  std::vector<int32_t> encode_piece(std::string_view piece) const;

  std::vector<std::string> token_bytes_;         // id -> bytes
  std::unordered_map<std::string, int32_t> id_;  // vocab.json key (UTF-8) -> id
  int32_t byte_id_[256] = {};                    // the one-byte tokens
  // (a << 32 | b) -> (rank, merged id): the merges, looked up once per adjacent pair in each pass
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merge_rank_;
};

}  // namespace dl::tasks
