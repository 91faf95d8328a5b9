// tasks/tokenizer.cpp - byte, character and byte-level BPE tokenizers (see tokenizer.h for the id layout).
#include "tasks/tokenizer.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "tasks/dataset.h"

namespace dl::tasks {

// ---- ByteTokenizer ---------------------------------------------------------------------------

int32_t ByteTokenizer::sentinel_id(int32_t i) const {
  if (i < 0 || i >= num_sentinels)
    throw DataError("ByteTokenizer::sentinel_id: sentinel " + std::to_string(i) + " requested, tokenizer has " +
                    std::to_string(num_sentinels) + " sentinels");
  return byte_offset + 256 + i;
}

std::vector<int32_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size());
  for (unsigned char c : text) ids.push_back(byte_offset + c);
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (id < 0 || id >= vocab_size())
      throw DataError("ByteTokenizer::decode: id " + std::to_string(id) + " at position " + std::to_string(i) +
                      " is outside the vocabulary [0, " + std::to_string(vocab_size()) + ")");
    if (id >= byte_offset + 256) {
      out += "<extra_id_" + std::to_string(id - byte_offset - 256) + ">";
    } else if (id >= byte_offset) {
      out += static_cast<char>(id - byte_offset);
    } else if (id == special_ids::mask) {
      out += "<mask>";
    }
  }
  return out;
}

// ---- CharTokenizer ---------------------------------------------------------------------------

namespace {

// Decodes one UTF-8 code point at text[pos]; returns the number of bytes used, or 0 when malformed.
size_t utf8_decode(std::string_view text, size_t pos, char32_t& cp) {
  const auto b0 = static_cast<unsigned char>(text[pos]);
  size_t n = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || pos + n > text.size()) return 0;
  cp = n == 1 ? b0 : n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(text[pos + k]);
    if ((b >> 6) != 0x2) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  return n;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

CharTokenizer CharTokenizer::train(std::string_view text) {
  CharTokenizer tok;
  std::map<char32_t, int32_t> seen;
  for (size_t pos = 0; pos < text.size();) {
    char32_t cp = 0;
    const size_t n = utf8_decode(text, pos, cp);
    if (n == 0) {  // malformed byte: it will encode as unk, it is not a character
      ++pos;
      continue;
    }
    seen[cp] = 0;
    pos += n;
  }
  for (auto& [cp, id] : seen) {  // std::map iterates in code point order
    id = special_ids::count + static_cast<int32_t>(tok.chars_.size());
    tok.chars_.push_back(cp);
  }
  tok.char_to_id_ = std::move(seen);
  return tok;
}

std::vector<int32_t> CharTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  for (size_t pos = 0; pos < text.size();) {
    char32_t cp = 0;
    const size_t n = utf8_decode(text, pos, cp);
    if (n == 0) {
      ids.push_back(special_ids::unk);
      ++pos;
      continue;
    }
    const auto it = char_to_id_.find(cp);
    ids.push_back(it == char_to_id_.end() ? special_ids::unk : it->second);
    pos += n;
  }
  return ids;
}

std::string CharTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (int32_t id : ids) {
    if (id >= special_ids::count && id < vocab_size()) utf8_append(out, chars_[id - special_ids::count]);
  }
  return out;
}

// ---- BPE -------------------------------------------------------------------------------------

namespace {

enum class ByteClass { space, letter, digit, other };

ByteClass classify(unsigned char c) {
  if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') return ByteClass::space;
  // Bytes >= 0x80 (parts of UTF-8 characters) count as letters so accented words stay whole.
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80) return ByteClass::letter;
  if (c >= '0' && c <= '9') return ByteClass::digit;
  return ByteClass::other;
}

uint64_t pair_key(int32_t a, int32_t b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b); }

constexpr int32_t bpe_first_merge_id = special_ids::count + 256;

}  // namespace

std::vector<std::string_view> bpe_pre_split(std::string_view text) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < text.size()) {
    const size_t start = i;
    ByteClass cls = classify(static_cast<unsigned char>(text[i]));
    // A single space directly before a non-space run belongs to that word (" the"), as in GPT-2.
    if (text[i] == ' ' && i + 1 < text.size() && classify(static_cast<unsigned char>(text[i + 1])) != ByteClass::space) {
      ++i;
      cls = classify(static_cast<unsigned char>(text[i]));
    } else if (cls == ByteClass::space) {
      // A run of whitespace, leaving its last space to the next word when one follows.
      while (i < text.size() && classify(static_cast<unsigned char>(text[i])) == ByteClass::space) ++i;
      if (i < text.size() && i - start > 1 && text[i - 1] == ' ') --i;
      words.push_back(text.substr(start, i - start));
      continue;
    }
    while (i < text.size() && classify(static_cast<unsigned char>(text[i])) == cls) ++i;
    words.push_back(text.substr(start, i - start));
  }
  return words;
}

BpeTokenizer BpeTokenizer::train(std::string_view text, int32_t num_merges) {
  if (num_merges < 0) throw DataError("BpeTokenizer::train: num_merges must be >= 0, got " + std::to_string(num_merges));
  // Unique words with their counts; every merge then works on (word, count) instead of the whole text.
  std::unordered_map<std::string_view, int64_t> counts;
  for (std::string_view w : bpe_pre_split(text)) ++counts[w];
  std::vector<std::pair<std::string_view, int64_t>> sorted_words(counts.begin(), counts.end());
  std::sort(sorted_words.begin(), sorted_words.end());  // deterministic order, independent of hashing
  std::vector<std::vector<int32_t>> words;
  std::vector<int64_t> freq;
  for (const auto& [w, c] : sorted_words) {
    std::vector<int32_t> ids;
    for (unsigned char ch : w) ids.push_back(special_ids::count + ch);
    words.push_back(std::move(ids));
    freq.push_back(c);
  }

  // Pair counts are built once and then updated only for the words a merge touches, which keeps training
  // on the 6 MB Brown text to seconds; the result is the same as recounting everything after each merge.
  std::unordered_map<uint64_t, int64_t> pair_counts;
  auto count_pairs = [&](size_t w, int64_t sign) {
    for (size_t k = 0; k + 1 < words[w].size(); ++k) pair_counts[pair_key(words[w][k], words[w][k + 1])] += sign * freq[w];
  };
  for (size_t w = 0; w < words.size(); ++w) count_pairs(w, +1);

  BpeTokenizer tok;
  for (int32_t m = 0; m < num_merges; ++m) {
    uint64_t best = 0;
    int64_t best_count = 0;
    for (const auto& [key, c] : pair_counts)
      if (c > best_count || (c == best_count && key < best)) best = key, best_count = c;
    if (best_count < 2) break;  // a pair seen once compresses nothing worth a vocabulary entry
    const auto a = static_cast<int32_t>(best >> 32), b = static_cast<int32_t>(best & 0xffffffffu);
    const int32_t new_id = bpe_first_merge_id + m;
    tok.merges_.emplace_back(a, b);
    for (size_t w = 0; w < words.size(); ++w) {
      auto& word = words[w];
      bool has_pair = false;
      for (size_t k = 0; k + 1 < word.size() && !has_pair; ++k) has_pair = word[k] == a && word[k + 1] == b;
      if (!has_pair) continue;
      count_pairs(w, -1);
      size_t out = 0;
      for (size_t k = 0; k < word.size(); ++k) {
        if (k + 1 < word.size() && word[k] == a && word[k + 1] == b) {
          word[out++] = new_id;
          ++k;
        } else {
          word[out++] = word[k];
        }
      }
      word.resize(out);
      count_pairs(w, +1);
    }
    if (m % 64 == 63) std::erase_if(pair_counts, [](const auto& kv) { return kv.second == 0; });  // zeros never win
  }
  tok.rebuild_tables();
  return tok;
}

void BpeTokenizer::rebuild_tables() {
  token_bytes_.assign(special_ids::count, std::string());
  for (int c = 0; c < 256; ++c) token_bytes_.push_back(std::string(1, static_cast<char>(c)));
  rank_.clear();
  for (size_t m = 0; m < merges_.size(); ++m) {
    token_bytes_.push_back(token_bytes_[merges_[m].first] + token_bytes_[merges_[m].second]);
    rank_[merges_[m]] = static_cast<int32_t>(m);
  }
}

std::vector<int32_t> BpeTokenizer::encode_word(std::string_view word) const {
  std::vector<int32_t> ids;
  for (unsigned char ch : word) ids.push_back(special_ids::count + ch);
  // Apply merges in the order they were learned: always the adjacent pair with the lowest rank first.
  while (ids.size() > 1) {
    int32_t best_rank = std::numeric_limits<int32_t>::max();
    for (size_t k = 0; k + 1 < ids.size(); ++k) {
      const auto it = rank_.find({ids[k], ids[k + 1]});
      if (it != rank_.end() && it->second < best_rank) best_rank = it->second;
    }
    if (best_rank == std::numeric_limits<int32_t>::max()) break;
    const auto [a, b] = merges_[best_rank];
    size_t out = 0;
    for (size_t k = 0; k < ids.size(); ++k) {
      if (k + 1 < ids.size() && ids[k] == a && ids[k + 1] == b) {
        ids[out++] = bpe_first_merge_id + best_rank;
        ++k;
      } else {
        ids[out++] = ids[k];
      }
    }
    ids.resize(out);
  }
  return ids;
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  for (std::string_view w : bpe_pre_split(text)) {
    const auto word_ids = encode_word(w);
    ids.insert(ids.end(), word_ids.begin(), word_ids.end());
  }
  return ids;
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size())
      throw DataError("BpeTokenizer::decode: id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                      " is outside the vocabulary [0, " + std::to_string(vocab_size()) + ")");
    out += token_bytes_[ids[i]];
  }
  return out;
}

void BpeTokenizer::save(const std::string& path) const {
  nlohmann::json j;
  j["type"] = "byte_bpe";
  j["version"] = 1;
  j["special_count"] = special_ids::count;
  j["merges"] = nlohmann::json::array();
  for (const auto& [a, b] : merges_) j["merges"].push_back({a, b});
  std::ofstream f(path);
  if (!f) throw DataError("BpeTokenizer::save: cannot open '" + path + "' for writing");
  f << j.dump() << "\n";
  if (!f) throw DataError("BpeTokenizer::save: write to '" + path + "' failed");
}

BpeTokenizer BpeTokenizer::load(const std::string& path) { return parse(read_file(path, "tokenizer file"), path); }

BpeTokenizer BpeTokenizer::parse(std::string_view text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw DataError("BpeTokenizer::load: '" + path + "' is not valid JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string() || j["type"] != "byte_bpe")
    throw DataError("BpeTokenizer::load: '" + path + "': expected \"type\": \"byte_bpe\"");
  if (!j.contains("special_count") || !j["special_count"].is_number_integer() || j["special_count"] != special_ids::count)
    throw DataError("BpeTokenizer::load: '" + path + "': expected special_count " + std::to_string(special_ids::count));
  if (!j.contains("merges") || !j["merges"].is_array())
    throw DataError("BpeTokenizer::load: '" + path + "': missing \"merges\" array");
  BpeTokenizer tok;
  const auto& merges = j["merges"];
  for (size_t m = 0; m < merges.size(); ++m) {
    const auto& e = merges[m];
    // A merge may only refer to bytes or to merges learned before it.
    const int64_t limit = bpe_first_merge_id + static_cast<int64_t>(m);
    if (!e.is_array() || e.size() != 2 || !e[0].is_number_integer() || !e[1].is_number_integer() ||
        e[0].get<int64_t>() < special_ids::count || e[0].get<int64_t>() >= limit || e[1].get<int64_t>() < special_ids::count ||
        e[1].get<int64_t>() >= limit)
      throw DataError("BpeTokenizer::load: '" + path + "': merge " + std::to_string(m) + " must be a pair of ids in [5, " +
                      std::to_string(limit) + "), found " + e.dump());
    tok.merges_.emplace_back(e[0].get<int32_t>(), e[1].get<int32_t>());
  }
  tok.rebuild_tables();
  return tok;
}

}  // namespace dl::tasks
