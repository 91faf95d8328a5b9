// tasks/gpt2_tokenizer_json.cpp - tokenizer.json as GPT-2's byte-level BPE (what is read and checked: the header). The
// file's model.vocab and model.merges are turned back into the texts of vocab.json and merges.txt, so Gpt2Bpe::parse
// checks them with the same rules and messages; this file checks what only tokenizer.json says.
#include "tasks/gpt2_tokenizer_json.h"

#include <nlohmann/json.hpp>
#include <unordered_set>
#include <vector>

#include "tasks/dataset.h"

namespace dl::tasks {

namespace {

using json = nlohmann::json;

// The whole text as JSON; a key twice in one object (at any depth) is named, as a parse error is (with its byte offset).
json parse_strict(std::string_view text, const std::string& name) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") throw DataError(name + ": starts with a UTF-8 byte order mark; expected none");
  std::vector<std::unordered_set<std::string>> open;  // the keys seen in each object being parsed
  std::string repeated;
  const auto on_event = [&](int, json::parse_event_t e, json& parsed) {
    if (e == json::parse_event_t::object_start) open.emplace_back();
    else if (e == json::parse_event_t::object_end && !open.empty()) open.pop_back();
    else if (e == json::parse_event_t::key && !open.empty() && !open.back().insert(parsed.get<std::string>()).second &&
             repeated.empty())
      repeated = parsed.get<std::string>();
    return true;
  };
  json j;
  try {
    j = json::parse(text.begin(), text.end(), on_event);
  } catch (const json::parse_error& e) {
    throw DataError(name + ": not valid JSON (" + e.what() + "); expected Hugging Face's tokenizer.json");
  }
  if (!repeated.empty()) throw DataError(name + ": the key \"" + repeated + "\" appears twice in one object; expected each once");
  return j;
}

std::string found(const json& v) { return v.is_string() ? "\"" + v.get<std::string>() + "\"" : v.dump(); }

// j[key] as the object it must be; `path` is j's place in the file ("" for the top, "model." inside model).
const json& object_at(const json& j, const std::string& key, const std::string& path, const std::string& name) {
  if (!j.contains(key)) throw DataError(name + ": " + path + key + " is missing; expected an object");
  const json& v = j.at(key);
  if (!v.is_object()) throw DataError(name + ": " + path + key + " is a " + v.type_name() + "; expected an object");
  return v;
}

// pre_tokenizer, normalizer and the subword affixes: what makes the split and the byte map GPT-2's.
void check_byte_level(const json& j, const json& model, const std::string& name) {
  if (j.contains("normalizer") && !j.at("normalizer").is_null())
    throw DataError(name + ": normalizer is " + j.at("normalizer").dump() + "; expected null (GPT-2 normalises nothing)");
  const json& pre = object_at(j, "pre_tokenizer", "", name);
  if (!pre.contains("type") || pre.at("type") != "ByteLevel")
    throw DataError(name + ": pre_tokenizer.type is " + (pre.contains("type") ? found(pre.at("type")) : "missing") +
                    "; expected \"ByteLevel\" (GPT-2's byte-level BPE)");
  if (!pre.contains("add_prefix_space") || pre.at("add_prefix_space") != false)
    throw DataError(name + ": pre_tokenizer.add_prefix_space is " +
                    (pre.contains("add_prefix_space") ? pre.at("add_prefix_space").dump() : "missing") +
                    "; expected false (GPT-2 puts no space before the text)");
  if (pre.contains("use_regex") && pre.at("use_regex") != true)
    throw DataError(name + ": pre_tokenizer.use_regex is " + pre.at("use_regex").dump() +
                    "; expected true (GPT-2's pattern splits the text)");
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(affix) && !model.at(affix).is_null() && model.at(affix) != "")
      throw DataError(name + ": model." + affix + " is " + found(model.at(affix)) + "; expected null or \"\" (byte-level BPE)");
}

// model.merges as the lines of merges.txt: entry n is line n.
std::string merges_text(const json& model, const std::string& name) {
  if (!model.contains("merges") || !model.at("merges").is_array())
    throw DataError(name + ": model.merges is " +
                    (model.contains("merges") ? std::string("a ") + model.at("merges").type_name() : "missing") +
                    "; expected an array of merges, \"A B\" or [\"A\", \"B\"]");
  std::string text;
  size_t n = 0;
  for (const json& m : model.at("merges")) {
    const std::string where = name + ": model.merges:" + std::to_string(++n) + ": ";
    std::string line;
    if (m.is_string()) {
      line = m.get<std::string>();
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      for (const json& tok : m)
        if (tok.get<std::string>().find(' ') != std::string::npos)
          throw DataError(where + "the token " + found(tok) + " holds a space; byte-level tokens write it as \"\xC4\xA0\"");
      line = m[0].get<std::string>() + " " + m[1].get<std::string>();
    } else {
      throw DataError(where + "found " + m.dump() + "; expected \"A B\" or [\"A\", \"B\"]");
    }
    if (line.find_first_of("\r\n") != std::string::npos)
      throw DataError(where + "found " + found(m) + ", which holds a line break; expected two tokens");
    if (n == 1 && line.rfind("#version", 0) == 0)  // merges.txt's header line: read as one here, so refused
      throw DataError(where + "found " + found(m) + "; expected a merge, not a \"#version\" line");
    text += line + "\n";
  }
  return text;
}

}  // namespace

Gpt2Bpe parse_gpt2_tokenizer_json(std::string_view text, const std::string& name) {
  const json j = parse_strict(text, name);
  if (!j.is_object())
    throw DataError(name + ": expected a JSON object (Hugging Face's tokenizer.json), found a " + j.type_name());
  const json& model = object_at(j, "model", "", name);
  if (!model.contains("type") || model.at("type") != "BPE")
    throw DataError(name + ": model.type is " + (model.contains("type") ? found(model.at("type")) : "missing") +
                    "; expected \"BPE\"");
  check_byte_level(j, model, name);
  const json& vocab = object_at(model, "vocab", "model.", name);
  Gpt2Bpe t = Gpt2Bpe::parse(vocab.dump(), merges_text(model, name), name + ": model.vocab", name + ": model.merges");
  if (j.contains("added_tokens") && !j.at("added_tokens").is_null()) {
    const json& added = j.at("added_tokens");
    if (!added.is_array())
      throw DataError(name + ": added_tokens is a " + std::string(added.type_name()) + "; expected an array");
    for (size_t i = 0; i < added.size(); i++) {
      const json& a = added[i];
      const std::string where = name + ": added_tokens[" + std::to_string(i) + "]: ";
      if (!a.is_object() || !a.contains("id") || !a.at("id").is_number_integer() || !a.contains("content") ||
          !a.at("content").is_string())
        throw DataError(where + "found " + a.dump() + "; expected {\"id\": integer, \"content\": string, ...}");
      const std::optional<int32_t> id = t.find(a.at("content").get<std::string>());
      if (!id || *id != a.at("id").get<int64_t>())
        throw DataError(where + found(a.at("content")) + " has the id " + a.at("id").dump() + ", but model.vocab " +
                        (id ? "gives it " + std::to_string(*id) : std::string("does not hold it")) +
                        "; expected an added token to be a model.vocab token with the same id");
    }
  }
  return t;
}

Gpt2Bpe load_gpt2_tokenizer_json(const std::string& path) {
  return parse_gpt2_tokenizer_json(read_file(path, "Hugging Face tokenizer (tokenizer.json)"), path);
}

}  // namespace dl::tasks
