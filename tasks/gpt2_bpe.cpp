// tasks/gpt2_bpe.cpp - GPT-2's byte-level BPE: the byte map, the pre-tokenizer, the two file readers, encode and
// decode (see gpt2_bpe.h). The character classes are in gpt2_bpe_unicode.cpp.
#include "tasks/gpt2_bpe.h"

#include <array>
#include <cstdio>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "tasks/dataset.h"

namespace dl::tasks {

namespace {

constexpr char32_t kInvalid = 0xFFFFFFFF;  // a byte that starts no valid UTF-8 character

// One character of the text: its code point (kInvalid for a lone bad byte), class, and where its bytes are.
struct Char {
  char32_t cp;
  CharClass cls;
  size_t begin, end;
};

// Strict UTF-8 (RFC 3629): the length of the character at s[pos] and its code point, or 0 when the bytes there are
// not one (continuation byte, overlong form, surrogate, past U+10FFFF, truncated).
size_t utf8_char(std::string_view s, size_t pos, char32_t& cp) {
  const auto b0 = (unsigned char)s[pos];
  if (b0 < 0x80) return cp = b0, 1;
  const size_t n = b0 >= 0xC2 && b0 <= 0xDF ? 2 : b0 >= 0xE0 && b0 <= 0xEF ? 3 : b0 >= 0xF0 && b0 <= 0xF4 ? 4 : 0;
  if (n == 0 || pos + n > s.size()) return 0;
  cp = b0 & (0x7F >> n);
  for (size_t k = 1; k < n; k++) {
    const auto b = (unsigned char)s[pos + k];
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  const char32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

std::vector<Char> chars_of(std::string_view text) {
  std::vector<Char> cs;
  for (size_t pos = 0; pos < text.size();) {
    char32_t cp = 0;
    const size_t n = utf8_char(text, pos, cp);
    if (n == 0) {
      cs.push_back({kInvalid, CharClass::other, pos, pos + 1});
      pos++;
    } else {
      cs.push_back({cp, gpt2_char_class(cp), pos, pos + n});
      pos += n;
    }
  }
  return cs;
}

// bytes_to_unicode as two tables: byte -> code point, and code point (< 0x144) -> byte or -1.
struct ByteMap {
  std::array<char32_t, 256> to_char{};
  std::array<int, 0x144> to_byte{};
  ByteMap() {
    to_byte.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; b++) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_char[b] = printable ? (char32_t)b : next++;
      to_byte[to_char[b]] = b;
    }
  }
};
const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

// The end of the piece that starts at character i (step 1 of gpt2_bpe.h: the pattern's alternatives in order).
size_t piece_end(const std::vector<Char>& c, size_t i) {
  const size_t n = c.size();
  if (c[i].cp == '\'') {  // 's 't 're 've 'm 'll 'd
    for (const char* suffix : {"s", "t", "re", "ve", "m", "ll", "d"}) {
      size_t k = 0;
      while (suffix[k] && i + 1 + k < n && c[i + 1 + k].cp == (char32_t)suffix[k]) k++;
      if (!suffix[k]) return i + 1 + k;
    }
  }
  // ' '?\p{L}+ | ' '?\p{N}+ | ' '?[^\s\p{L}\p{N}]+ : an optional space, then a run of one class
  const size_t k = c[i].cp == ' ' && i + 1 < n ? i + 1 : i;
  if (c[k].cls != CharClass::space) {
    size_t j = k;
    while (j < n && c[j].cls == c[k].cls) j++;
    return j;
  }
  // \s+(?!\S) | \s+ : the white-space run at i, less its last character when a non-space follows a run of two or more
  size_t j = i;
  while (j < n && c[j].cls == CharClass::space) j++;
  return j < n && j - i >= 2 ? j - 1 : j;
}

std::string hex_bytes(std::string_view s) {
  std::string out;
  char buf[4];
  for (unsigned char b : s) std::snprintf(buf, sizeof buf, "%02X", b), out += (out.empty() ? "" : " ") + std::string(buf);
  return out;
}

void check_no_bom(std::string_view text, const std::string& name) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF")
    throw DataError(name + ":1: starts with a UTF-8 byte order mark (EF BB BF); GPT-2's tokenizer files have none: "
                           "save the file as UTF-8 without a BOM");
}

// "L:C" (line and column from 1) of the byte at a 0-based offset
std::string line_col(std::string_view text, size_t offset) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < offset && i < text.size(); i++) text[i] == '\n' ? (line++, col = 1) : col++;
  return std::to_string(line) + ":" + std::to_string(col);
}

// A vocab.json key as the bytes its characters stand for; DataError when one stands for no byte.
std::string key_bytes(const std::string& key, int64_t id, const std::string& name) {
  if (key.empty()) throw DataError(name + ": id " + std::to_string(id) + " has an empty token; expected one or more characters");
  std::string bytes;
  for (size_t pos = 0; pos < key.size();) {
    char32_t cp = 0;
    const size_t n = utf8_char(key, pos, cp);
    const int b = n && cp < 0x144 ? byte_map().to_byte[cp] : -1;
    if (b < 0) {
      char u[16];
      std::snprintf(u, sizeof u, "U+%04X", n ? (unsigned)cp : 0u);
      throw DataError(name + ": token \"" + key + "\" (id " + std::to_string(id) + ") has " +
                      (n ? std::string("the character ") + u : "the invalid UTF-8 byte " + hex_bytes(key.substr(pos, 1))) +
                      ", which stands for no byte; expected characters of GPT-2's byte-to-unicode map only");
    }
    bytes += (char)b;
    pos += n;
  }
  return bytes;
}

}  // namespace

char32_t gpt2_byte_char(unsigned char b) { return byte_map().to_char[b]; }
int gpt2_char_byte(char32_t c) { return c < 0x144 ? byte_map().to_byte[c] : -1; }

std::vector<std::string_view> gpt2_pre_split(std::string_view text) {
  const std::vector<Char> c = chars_of(text);
  std::vector<std::string_view> pieces;
  for (size_t i = 0; i < c.size();) {
    const size_t j = piece_end(c, i);
    pieces.push_back(text.substr(c[i].begin, c[j - 1].end - c[i].begin));
    i = j;
  }
  return pieces;
}

// ---- reading the files -----------------------------------------------------------------------------------------

Gpt2Bpe Gpt2Bpe::load(const std::string& vocab_path, const std::string& merges_path) {
  return parse(read_file(vocab_path, "GPT-2 vocabulary (vocab.json)"), read_file(merges_path, "GPT-2 merges (merges.txt)"),
               vocab_path, merges_path);
}

Gpt2Bpe Gpt2Bpe::parse(std::string_view vocab_json, std::string_view merges_txt, const std::string& vocab_name,
                       const std::string& merges_name) {
  using json = nlohmann::json;
  Gpt2Bpe t;
  // vocab.json: {token: id}; a repeated key would silently keep its last id, so keys are checked as they are parsed
  check_no_bom(vocab_json, vocab_name);
  std::unordered_set<std::string> keys;
  std::string repeated;
  const auto on_event = [&](int depth, json::parse_event_t e, json& parsed) {
    if (depth == 1 && e == json::parse_event_t::key && !keys.insert(parsed.get<std::string>()).second && repeated.empty())
      repeated = parsed.get<std::string>();
    return true;
  };
  json v;
  try {
    v = json::parse(vocab_json.begin(), vocab_json.end(), on_event);
  } catch (const json::parse_error& e) {  // e.byte counts the bytes read, up to the offending one
    throw DataError(vocab_name + ":" + line_col(vocab_json, e.byte ? e.byte - 1 : 0) + ": not valid JSON (" + e.what() +
                    "); expected an object {\"token\": id, ...}");
  }
  if (!v.is_object()) throw DataError(vocab_name + ": expected a JSON object {\"token\": id, ...}, found a " + v.type_name());
  if (!repeated.empty())
    throw DataError(vocab_name + ": the token \"" + repeated + "\" is a key twice; expected each token once");
  std::vector<const std::string*> by_id(v.size(), nullptr);
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!it.value().is_number_integer())
      throw DataError(vocab_name + ": token \"" + it.key() + "\" has the id " + it.value().dump() + "; expected an integer");
    const int64_t id = it.value().get<int64_t>();
    if (id < 0 || id >= (int64_t)v.size())
      throw DataError(vocab_name + ": token \"" + it.key() + "\" has the id " + std::to_string(id) + "; expected ids 0 .. " +
                      std::to_string((int64_t)v.size() - 1) + " (one per token, no gaps) for " + std::to_string(v.size()) +
                      " tokens");
    if (by_id[id])
      throw DataError(vocab_name + ": the id " + std::to_string(id) + " is given to both \"" + *by_id[id] + "\" and \"" +
                      it.key() + "\"; expected each id once");
    by_id[id] = &it.key();
  }
  t.token_bytes_.resize(v.size());
  std::array<bool, 256> has_byte{};
  for (size_t id = 0; id < by_id.size(); id++) {  // every slot is filled: n distinct ids in [0, n)
    t.token_bytes_[id] = key_bytes(*by_id[id], (int64_t)id, vocab_name);
    t.id_[*by_id[id]] = (int32_t)id;
    if (t.token_bytes_[id].size() == 1) {
      const auto b = (unsigned char)t.token_bytes_[id][0];
      has_byte[b] = true, t.byte_id_[b] = (int32_t)id;
    }
  }
  for (int b = 0; b < 256; b++)
    if (!has_byte[b]) {
      std::string ch;
      const char32_t c = gpt2_byte_char((unsigned char)b);
      ch = c < 0x80 ? std::string(1, (char)c) : std::string{(char)(0xC0 | (c >> 6)), (char)(0x80 | (c & 0x3F))};
      throw DataError(vocab_name + ": the byte " + hex_bytes(std::string(1, (char)b)) + " has no token (\"" + ch +
                      "\"); expected all 256 one-byte tokens, so that every text can be encoded");
    }

  // merges.txt: "#version..." first, then "A B" a line
  check_no_bom(merges_txt, merges_name);
  size_t pos = 0;
  for (int64_t line_no = 1; pos < merges_txt.size(); line_no++) {
    size_t nl = merges_txt.find('\n', pos);
    const bool last = nl == std::string_view::npos;
    if (last) nl = merges_txt.size();
    const std::string_view line = merges_txt.substr(pos, nl - pos);
    pos = nl + 1;
    const std::string where = merges_name + ":" + std::to_string(line_no) + ": ";
    if (!line.empty() && line.back() == '\r')
      throw DataError(where + "ends in CR LF (a Windows line end); expected LF only, or the CR would be part of a token");
    if (line_no == 1 && line.substr(0, 8) == "#version") continue;
    if (line.empty()) {
      if (merges_txt.find_first_not_of('\n', pos) == std::string_view::npos) break;  // blank lines at the end
      throw DataError(where + "is empty; expected a merge \"A B\" (empty lines only at the end)");
    }
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos || line.find(' ', sp + 1) != std::string_view::npos || sp == 0 || sp + 1 == line.size())
      throw DataError(where + "expected two tokens separated by one space (\"A B\"), found \"" + std::string(line) + "\"");
    const std::string a(line.substr(0, sp)), b(line.substr(sp + 1));
    for (const std::string& tok : {a, b})
      if (!t.id_.count(tok)) throw DataError(where + "the token \"" + tok + "\" is not in " + vocab_name);
    const auto merged = t.id_.find(a + b);
    if (merged == t.id_.end())
      throw DataError(where + "merges \"" + a + "\" and \"" + b + "\" into \"" + a + b + "\", which is not in " + vocab_name);
    const uint64_t key = (uint64_t)(uint32_t)t.id_[a] << 32 | (uint32_t)t.id_[b];
    if (t.merge_rank_.count(key))
      throw DataError(where + "the merge \"" + a + " " + b + "\" is a repeat of line " +
                      std::to_string(t.merge_rank_[key].first + 1 + (merges_txt.substr(0, 8) == "#version")) +
                      "; expected each pair once");
    t.merge_rank_[key] = {(int32_t)t.merge_rank_.size(), merged->second};
    if (last) break;
  }
  return t;
}

// ---- encode and decode -----------------------------------------------------------------------------------------

// Steps 2-3 of gpt2_bpe.h on one piece. Each pass finds the lowest-ranked adjacent pair and merges every occurrence,
// left to right; a pass costs O(length), and there are at most length - 1 of them.
std::vector<int32_t> Gpt2Bpe::encode_piece(std::string_view piece) const {
  std::vector<int32_t> w;
  w.reserve(piece.size());
  for (unsigned char b : piece) w.push_back(byte_id_[b]);
  const auto rank_of = [&](size_t i) {
    const auto it = merge_rank_.find((uint64_t)(uint32_t)w[i] << 32 | (uint32_t)w[i + 1]);
    return it == merge_rank_.end() ? std::pair<int32_t, int32_t>{-1, -1} : it->second;
  };
  while (w.size() > 1) {
    std::pair<int32_t, int32_t> best{-1, -1};
    size_t at = 0;
    for (size_t i = 0; i + 1 < w.size(); i++) {
      const auto r = rank_of(i);
      if (r.first >= 0 && (best.first < 0 || r.first < best.first)) best = r, at = i;
    }
    if (best.first < 0) break;
    const int32_t a = w[at], b = w[at + 1];
    std::vector<int32_t> out(w.begin(), w.begin() + (std::ptrdiff_t)at);  // nothing before `at` is this pair
    for (size_t i = at; i < w.size();) {
      if (i + 1 < w.size() && w[i] == a && w[i + 1] == b) {
        out.push_back(best.second);
        i += 2;
      } else {
        out.push_back(w[i++]);
      }
    }
    w.swap(out);
  }
  return w;
}

std::vector<int32_t> Gpt2Bpe::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  for (std::string_view piece : gpt2_pre_split(text)) {
    const std::vector<int32_t> p = encode_piece(piece);
    ids.insert(ids.end(), p.begin(), p.end());
  }
  return ids;
}

const std::string& Gpt2Bpe::token_bytes(int32_t id) const {
  if (id < 0 || id >= vocab_size())
    throw DataError("Gpt2Bpe: id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(vocab_size()) + ")");
  return token_bytes_[id];
}

std::string Gpt2Bpe::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); i++) {
    if (ids[i] < 0 || ids[i] >= vocab_size())
      throw DataError("Gpt2Bpe::decode: id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                      " is outside the vocabulary [0, " + std::to_string(vocab_size()) + ")");
    out += token_bytes_[ids[i]];
  }
  return out;
}

std::optional<int32_t> Gpt2Bpe::find(const std::string& token) const {
  const auto it = id_.find(token);
  return it == id_.end() ? std::nullopt : std::optional<int32_t>(it->second);
}

}  // namespace dl::tasks
