// apps/pretrained_convs/data.cpp - the tasks and the pretraining windows (see data.h).
#include "data.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

#include "apps/common/config.h"
#include "tasks/brown.h"
#include "tasks/english.h"
#include "tasks/objectives.h"
#include "tasks/text_classification.h"
#include "tasks/tokenizer.h"

namespace pconv {

using namespace dl;
using tasks::DataError;
using tasks::LabeledText;
using tasks::TextSplits;
namespace fs = std::filesystem;

int32_t vocab_size() { return tasks::ByteTokenizer{kSentinels}.vocab_size(); }

std::vector<int32_t> encode_input(const std::string& text, bool pair, int32_t max_src) {
  if (!pair) return encode_text(text, max_src);
  const size_t sep = text.find('\x01');
  const int half = (max_src - 2) / 2;
  std::vector<int32_t> a = tasks::ByteTokenizer{}.encode(text.substr(0, sep)),
                       b = tasks::ByteTokenizer{}.encode(sep == std::string::npos ? std::string() : text.substr(sep + 1));
  if ((int)a.size() > half) a.resize(half);
  if ((int)b.size() > half) b.resize(half);
  std::vector<int32_t> e = a;
  e.push_back(kSeparator);
  e.insert(e.end(), b.begin(), b.end());
  e.push_back(tasks::special_ids::eos);
  return e;
}

std::vector<int32_t> encode_text(const std::string& text, int32_t max_len) {
  std::vector<int32_t> ids = tasks::ByteTokenizer{}.encode(text);
  if ((int32_t)ids.size() > max_len - 1) ids.resize(std::max(0, max_len - 1));
  ids.push_back(tasks::special_ids::eos);
  return ids;
}

std::string decode_bytes(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) {
    if (id == tasks::special_ids::eos) break;
    if (id >= tasks::ByteTokenizer::byte_offset && id < tasks::ByteTokenizer::byte_offset + 256)
      s += (char)(id - tasks::ByteTokenizer::byte_offset);
  }
  return s;
}

int32_t decode_label(const std::string& decoded, const std::vector<std::string>& class_names) {
  for (size_t i = 0; i < class_names.size(); i++)
    if (decoded == class_names[i]) return (int32_t)i;
  return -1;
}

// ---- the user's own files --------------------------------------------------------------------------------

// One CSV record (RFC 4180: fields separated by commas, quoted fields may hold commas, newlines and "" for a
// quote). Returns false at the end of the input; `line` counts physical lines.
static bool csv_record(std::istream& in, std::vector<std::string>& fields, int& line, const std::string& path) {
  fields.clear();
  std::string f;
  bool quoted = false, any = false, was_quoted = false;
  const int start = line + 1;
  for (int ch; (ch = in.get()) != EOF;) {
    any = true;
    const char c = (char)ch;
    if (quoted) {
      if (c == '"') {
        if (in.peek() == '"') f += '"', in.get();
        else quoted = false;
      } else {
        if (c == '\n') line++;
        f += c;
      }
    } else if (c == '"' && f.empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else if (c == ',') {
      fields.push_back(f), f.clear(), was_quoted = false;
    } else if (c == '\n') {
      line++;
      if (!f.empty() && f.back() == '\r') f.pop_back();
      fields.push_back(f);
      return true;
    } else {
      f += c;
    }
  }
  if (quoted) throw DataError(path + ":" + std::to_string(start) + ": a quoted field is not closed before the end of the file");
  if (!any) return false;
  if (!f.empty() && f.back() == '\r') f.pop_back();
  line++;
  fields.push_back(f);
  return true;
}

std::vector<LabeledText> read_text_label_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": cannot open the file");
  std::vector<LabeledText> out;
  const bool csv = path.ends_with(".csv");
  if (!csv && !path.ends_with(".tsv")) throw DataError(path + ": expected a .tsv or .csv file");
  int line = 0;
  if (!csv) {
    for (std::string s; std::getline(in, s);) {
      line++;
      if (!s.empty() && s.back() == '\r') s.pop_back();
      if (s.empty()) continue;
      const size_t tab = s.find('\t');
      if (tab == std::string::npos || tab == 0)
        throw DataError(path + ":" + std::to_string(line) + ": expected \"label<TAB>text\", found " +
                        (tab == 0 ? "no label before the tab" : "no tab"));
      out.push_back({path + ":" + std::to_string(line), s.substr(tab + 1), -1, -1});
      out.back().id = s.substr(0, tab);  // the label word for now; made into a class below
    }
    return out;
  }
  std::vector<std::string> header, row;
  if (!csv_record(in, header, line, path)) throw DataError(path + ": the file is empty (expected a header with text,label)");
  auto column = [&](const char* name) {
    auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end())
      throw DataError(path + ":1: the header has no column '" + name + "' (found: " + dl::harness::join(header) + ")");
    return (size_t)(it - header.begin());
  };
  const size_t tc = column("text"), lc = column("label");
  while (true) {
    const int at = line + 1;
    if (!csv_record(in, row, line, path)) break;
    if (row.size() == 1 && row[0].empty()) continue;
    if (row.size() != header.size())
      throw DataError(path + ":" + std::to_string(at) + ": " + std::to_string(row.size()) + " fields, the header has " +
                      std::to_string(header.size()));
    if (row[lc].empty()) throw DataError(path + ":" + std::to_string(at) + ": field 'label' is empty");
    out.push_back({row[lc], row[tc], -1, -1});
  }
  return out;
}

// ---- the generated tasks ---------------------------------------------------------------------------------

template <class T> static const T& pick(const std::vector<T>& v, std::mt19937_64& rng) {
  return v[tasks::uniform_below(rng, v.size())];
}

// TREC's six coarse classes; every template's answer type is its class. Slots: {thing} {things} {person} {place}
// {abbr} {animal} {event}.
static TextSplits question_texts(int n, uint64_t seed) {
  static const std::map<std::string, std::vector<std::string>> slots = {
      {"thing",
       {"telescope", "steam engine", "printing press", "radio", "vaccine", "bicycle", "compass", "light bulb", "telephone",
        "microscope", "airplane", "camera", "computer", "submarine", "calendar", "violin"}},
      {"things",
       {"bones in the human body", "states in America", "keys on a piano", "players on a soccer team", "moons of Jupiter",
        "days in a leap year", "strings on a guitar", "planets in the solar system", "hearts in an octopus",
        "squares on a chess board"}},
      {"person",
       {"Shakespeare", "Mozart", "Napoleon", "Marie Curie", "Lincoln", "Einstein", "Galileo", "Columbus", "Picasso", "Darwin",
        "Gandhi", "Cleopatra", "Beethoven", "Newton"}},
      {"place",
       {"Mount Everest", "the Sahara", "Lake Victoria", "the Eiffel Tower", "Machu Picchu", "the Amazon river", "Timbuktu",
        "the Great Barrier Reef", "Stonehenge", "the Panama Canal", "Mount Fuji", "the Nile"}},
      {"abbr", {"NASA", "UNESCO", "AIDS", "NATO", "DNA", "FBI", "CPU", "laser", "scuba", "radar", "OPEC", "UFO", "BBC"}},
      {"animal", {"whale", "cheetah", "owl", "octopus", "camel", "penguin", "elephant", "bat", "shark", "beaver", "wolf"}},
      {"event",
       {"the French Revolution", "the Olympic games", "the Gold Rush", "the First World War", "the Renaissance",
        "the moon landing", "the Industrial Revolution", "the Cold War"}}};
  static const std::vector<std::pair<std::string, std::vector<std::string>>> classes = {
      {"abbreviation",
       {"What does {abbr} stand for?", "What is the full form of {abbr}?", "What is {abbr} short for?",
        "What do the letters {abbr} mean?", "{abbr} is an abbreviation of what?"}},
      {"description",
       {"What is a {thing}?", "How does a {thing} work?", "Why does the {animal} migrate?", "What was {event}?",
        "Why is {place} famous?", "How does the {animal} hunt?", "What is the purpose of a {thing}?", "Why did {event} happen?"}},
      {"entity",
       {"What color is the {animal}?", "What instrument did {person} play?", "What language did {person} speak?",
        "What kind of animal is the {animal}?", "What was the first {thing} made of?", "What does the {animal} eat?",
        "Which prize did {person} win?"}},
      {"human",
       {"Who invented the {thing}?", "Who discovered {place}?", "Who was {person}?", "Who painted a portrait of {person}?",
        "What was the name of the man who built the first {thing}?", "Which scientist studied the {animal}?",
        "Who led {event}?"}},
      {"location",
       {"Where is {place}?", "Where was {person} born?", "What country is {place} in?", "In which city did {event} begin?",
        "Where does the {animal} live?", "What continent is home to the {animal}?", "Where did {person} die?"}},
      {"number",
       {"How many {things} are there?", "When was {person} born?", "In what year did {event} start?", "How tall is {place}?",
        "How long does a {animal} live?", "What year was the {thing} invented?", "How much did the first {thing} cost?",
        "How old was {person} in {event}?"}}};
  std::mt19937_64 rng(seed * 1000003 + 17);
  std::set<std::string> seen;
  std::vector<LabeledText> all;
  for (int tries = 0; (int)all.size() < n && tries < 50 * n; tries++) {
    const int32_t label = (int32_t)tasks::uniform_below(rng, classes.size());
    std::string q = pick(classes[label].second, rng), out;
    for (size_t i = 0; i < q.size();) {
      if (q[i] != '{') {
        out += q[i++];
        continue;
      }
      const size_t e = q.find('}', i);
      out += pick(slots.at(q.substr(i + 1, e - i - 1)), rng);
      i = e + 1;
    }
    if (seen.insert(out).second) all.push_back({"q" + std::to_string(all.size()), out, label, -1});
  }
  TextSplits s = tasks::split_by_document(all, 0.1, 0.2, seed);
  for (auto& [name, t] : classes) s.class_names.push_back(name);
  return s;
}

// ---- SCAN-like commands ----
static const std::vector<std::string> kVerbs = {"walk", "run", "look", "jump"};
static const std::vector<std::string> kDirections = {
    "", "left", "right", "opposite left", "opposite right", "around left", "around right"};
static const std::vector<std::string> kTimes = {"", "twice", "thrice"};

static std::string phrase_actions(const std::vector<std::string>& w, size_t& i, const std::string& command) {
  static const std::map<std::string, char> letter = {{"walk", 'W'}, {"run", 'R'}, {"look", 'L'}, {"jump", 'J'}};
  auto bad = [&](const std::string& why) { return DataError("compositional: \"" + command + "\": " + why); };
  if (i >= w.size() || !letter.count(w[i])) throw bad("expected a verb (walk, run, look, jump) at word " + std::to_string(i + 1));
  const std::string v(1, letter.at(w[i++]));
  std::string one = v;
  if (i < w.size() && (w[i] == "opposite" || w[i] == "around")) {
    const std::string mod = w[i++];
    if (i >= w.size() || (w[i] != "left" && w[i] != "right")) throw bad("'" + mod + "' must be followed by left or right");
    const std::string turn = w[i++] == "left" ? "<" : ">";
    one = mod == "opposite" ? turn + turn + v : turn + v + turn + v + turn + v + turn + v;
  } else if (i < w.size() && (w[i] == "left" || w[i] == "right")) {
    one = (w[i++] == "left" ? "<" : ">") + v;
  }
  int times = 1;
  if (i < w.size() && (w[i] == "twice" || w[i] == "thrice")) times = w[i++] == "twice" ? 2 : 3;
  std::string out;
  for (int k = 0; k < times; k++) out += one;
  return out;
}

std::string scan_actions(const std::string& command) {
  std::vector<std::string> w;
  std::istringstream is(command);
  for (std::string s; is >> s;) w.push_back(s);
  size_t i = 0;
  std::string first = phrase_actions(w, i, command);
  if (i == w.size()) return first;
  const std::string conj = w[i++];
  if (conj != "and" && conj != "after")
    throw DataError("compositional: \"" + command + "\": expected 'and' or 'after', found '" + conj + "'");
  std::string second = phrase_actions(w, i, command);
  if (i != w.size()) throw DataError("compositional: \"" + command + "\": unexpected words after the second phrase");
  return conj == "and" ? first + second : second + first;
}

bool scan_is_held_out(const std::string& command) {
  for (size_t at = command.find("jump"); at != std::string::npos; at = command.find("jump", at + 1))
    if (command.compare(at, 17, "jump around right") == 0) return true;
  return false;
}

ScanSplit scan_commands(int train_size, int test_size, int ood_size, uint64_t seed) {
  std::vector<std::string> phrases;
  for (auto& v : kVerbs)
    for (auto& d : kDirections)
      for (auto& t : kTimes) {
        std::string p = v;
        if (!d.empty()) p += " " + d;
        if (!t.empty()) p += " " + t;
        phrases.push_back(p);
      }
  std::vector<std::string> all = phrases;
  for (auto& a : phrases)
    for (auto& b : phrases) all.push_back(a + " and " + b), all.push_back(a + " after " + b);
  std::mt19937_64 rng(seed * 7919 + 3);
  tasks::seeded_shuffle(all, rng);
  ScanSplit s;
  for (auto& c : all) {
    if (scan_is_held_out(c)) {
      if ((int)s.ood.size() < ood_size) s.ood.push_back(c);
    } else if ((int)s.test.size() < test_size) {
      s.test.push_back(c);
    } else if ((int)s.train.size() < train_size) {
      s.train.push_back(c);
    }
  }
  return s;
}

// ---- sentence pairs ----
static std::vector<std::string> sentences_of(const std::string& text, size_t min_len, size_t max_len) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); i++) {
    const char c = text[i];
    const bool end = (c == '.' || c == '?' || c == '!') && (i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\n');
    if (!end && c != '\n') continue;
    std::string s = text.substr(start, i + 1 - start);
    while (!s.empty() && (s.front() == ' ' || s.front() == '\n')) s.erase(s.begin());
    while (!s.empty() && s.back() == '\n') s.pop_back();
    if (s.size() >= min_len && s.size() <= max_len) out.push_back(s);
    start = i + 1;
  }
  return out;
}

static bool is_word(const std::string& w) {
  return w.size() >= 3 && std::all_of(w.begin(), w.end(), [](char c) { return std::isalpha((unsigned char)c); });
}

// Pairs from the sentences of `docs`; edited pairs replace one word of A by a different corpus word of the same
// length (so B's length never tells).
static std::vector<LabeledText> edit_pairs(const std::vector<LabeledText>& docs, int max_src, uint64_t seed) {
  std::vector<std::string> sents;
  for (auto& d : docs)
    for (auto& s : sentences_of(d.text, 30, (size_t)std::max(30, (max_src - 2) / 2))) sents.push_back(s);
  std::map<size_t, std::vector<std::string>> words_by_len;
  std::set<std::string> vocab;
  for (auto& s : sents) {
    std::istringstream is(s);
    for (std::string w; is >> w;)
      if (is_word(w) && vocab.insert(w).second) words_by_len[w.size()].push_back(w);
  }
  std::mt19937_64 rng(seed);
  std::vector<LabeledText> out;
  for (auto& a : sents) {
    const int32_t label = (int32_t)tasks::uniform_below(rng, 2);  // 0 same, 1 edited
    std::string b = a;
    if (label == 1) {
      std::vector<std::pair<size_t, size_t>> spans;  // candidate words: (start, length)
      for (size_t i = 0; i < a.size();) {
        size_t j = i;
        while (j < a.size() && a[j] != ' ') j++;
        if (is_word(a.substr(i, j - i)) && words_by_len[j - i].size() > 1) spans.push_back({i, j - i});
        i = j + 1;
      }
      if (spans.empty()) continue;
      auto [at, len] = pick(spans, rng);
      std::string w;
      do w = pick(words_by_len[len], rng);
      while (w == a.substr(at, len));
      b.replace(at, len, w);
    }
    out.push_back({"pair" + std::to_string(out.size()), a + '\x01' + b, label, -1});  // \x01 marks the separator
  }
  return out;
}

// ---- building the task -----------------------------------------------------------------------------------

std::vector<size_t> spread_indices(size_t n, size_t cap) {
  const size_t k = cap == 0 || cap >= n ? n : cap;
  std::vector<size_t> idx(k);
  for (size_t i = 0; i < k; i++) idx[i] = i * n / k;  // strictly increasing: n / k >= 1
  return idx;
}

static tasks::Dataset to_dataset(const std::vector<LabeledText>& xs, const std::vector<std::string>& class_names, int max_src,
                                 bool pair, const std::string& name, size_t cap) {
  tasks::Dataset d;
  d.name = name, d.vocab_size = vocab_size(), d.pad_id = tasks::special_ids::pad;
  d.num_classes = (int32_t)class_names.size(), d.class_names = class_names;
  for (size_t i : spread_indices(xs.size(), cap)) {
    const LabeledText& x = xs[i];
    tasks::Example e;
    e.tokens = encode_input(x.text, pair, max_src);
    e.label = x.label;
    e.tokens2 = encode_text(x.label >= 0 ? class_names.at(x.label) : x.id, 1 << 20);  // sequence tasks: the target in id
    d.max_len = std::max<int32_t>(d.max_len, (int32_t)e.tokens.size());
    d.examples.push_back(std::move(e));
  }
  return d;
}

// Labels given as words (textfile) -> classes, the names sorted; a test label unseen in training is an error.
static std::vector<std::string> classes_from_words(std::vector<LabeledText>& train, std::vector<LabeledText>& test) {
  std::set<std::string> words;
  for (auto& x : train) words.insert(x.id);
  std::vector<std::string> names(words.begin(), words.end());
  if (names.size() < 2)
    throw DataError("textfile: the training file has " + std::to_string(names.size()) +
                    " distinct label(s); a classifier needs 2 or more");
  for (auto* v : {&train, &test})
    for (auto& x : *v) {
      auto it = std::lower_bound(names.begin(), names.end(), x.id);
      if (it == names.end() || *it != x.id)
        throw DataError("textfile: label '" + x.id + "' is in the test file but not in the training file");
      x.label = (int32_t)(it - names.begin());
    }
  return names;
}

static Seq2SeqTask build_task(const CellConfig& c) {
  Seq2SeqTask t;
  t.name = c.task;
  TextSplits s;
  size_t cap_train = c.train_size, cap_val = c.val_size, cap_test = c.test_size;
  if (c.task == "sentiment") {
    std::vector<LabeledText> all = tasks::sentiment_sentences();
    s = tasks::split_by_document(all, 0.1, 0.2, 0);
    s.class_names = {"negative", "positive"};
  } else if (c.task == "topic") {
    tasks::DownstreamConfig dc;
    dc.chunk_len = std::max(32, c.max_src - 1);
    s = tasks::brown_genre_texts(dc);
    if (!cap_train) cap_train = 4000;
    if (!cap_val) cap_val = 500;
    if (!cap_test) cap_test = 1000;
  } else if (c.task == "questions") {
    s = question_texts(6000, 0);
  } else if (c.task == "compositional") {
    ScanSplit sc = scan_commands(c.train_size ? c.train_size : 4000, 600, 500, 0);
    auto to_texts = [](const std::vector<std::string>& cmds) {
      std::vector<LabeledText> v;
      for (auto& cmd : cmds) v.push_back({scan_actions(cmd), cmd, -1, -1});
      return v;
    };
    std::vector<LabeledText> test = to_texts(sc.test);
    s.train = to_texts(sc.train);
    s.val.assign(test.begin(), test.begin() + 200), s.test.assign(test.begin() + 200, test.end());
    t.ood_test = to_dataset(to_texts(sc.ood), {}, c.max_src, false, "compositional/ood", cap_test);
  } else if (c.task == "pair_edit") {
    std::vector<LabeledText> docs;
    for (auto& d : tasks::load_brown()) docs.push_back({d.file_id, d.text, d.class5, -1});
    TextSplits by_doc = tasks::split_by_document(docs, 0.1, 0.2, 0);
    s.train = edit_pairs(by_doc.train, c.max_src, 1), s.val = edit_pairs(by_doc.val, c.max_src, 2);
    s.test = edit_pairs(by_doc.test, c.max_src, 3);
    s.class_names = {"same", "edited"};
    t.pair = true;
    if (!cap_train) cap_train = 6000;
    if (!cap_val) cap_val = 500;
    if (!cap_test) cap_test = 1000;
  } else if (c.task == "textfile") {
    auto file = [&](const std::string& stem) {
      for (const char* ext : {".tsv", ".csv"})
        if (fs::exists(c.data_path + "/" + stem + ext)) return c.data_path + "/" + stem + ext;
      throw DataError("textfile: " + c.data_path + " has no " + stem + ".tsv or " + stem + ".csv");
    };
    std::vector<LabeledText> train = read_text_label_file(file("train")), test = read_text_label_file(file("test"));
    s.class_names = classes_from_words(train, test);
    TextSplits tv = tasks::split_by_document(train, 0.1, 0.0, 0);
    s.train = tv.train, s.val = tv.val, s.test = test;
  } else if (c.task == "imdb") {
    TextSplits tv = tasks::split_by_document(tasks::read_imdb_split(c.data_path + "/train"), 0.1, 0.0, 0);
    s.train = tv.train, s.val = tv.val, s.test = tasks::read_imdb_split(c.data_path + "/test");
    s.class_names = {"negative", "positive"};
  } else {
    throw ConfigError("unknown task '" + c.task + "'");
  }
  if (c.task == "compositional") {
    s.class_names.clear();
  }
  t.class_names = s.class_names;
  t.data.train = to_dataset(s.train, t.class_names, c.max_src, t.pair, c.task + "/train", cap_train);
  t.data.val = to_dataset(s.val, t.class_names, c.max_src, t.pair, c.task + "/val", cap_val);
  t.data.test = to_dataset(s.test, t.class_names, c.max_src, t.pair, c.task + "/test", cap_test);
  for (auto* d : {&t.data.train, &t.data.val, &t.data.test, &t.ood_test})
    for (auto& e : d->examples) t.max_target = std::max<int32_t>(t.max_target, (int32_t)e.tokens2.size());
  if (t.data.train.examples.empty() || t.data.test.examples.empty())
    throw DataError(c.task + ": the training or test split is empty");
  return t;
}

const Seq2SeqTask& seq2seq_task(const CellConfig& c) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Seq2SeqTask>> cache;
  const std::string key = c.task + "|" + std::to_string(c.train_size) + "|" + std::to_string(c.val_size) + "|" +
                          std::to_string(c.test_size) + "|" + std::to_string(c.max_src) + "|" + c.data_path;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[key];
  if (!slot) slot = std::make_unique<Seq2SeqTask>(build_task(c));
  return *slot;
}

PretrainData span_corruption_data(int len, double density, double mean_span, int max_windows, uint64_t seed) {
  const std::string text = tasks::english_corpus().text;
  const size_t n = text.size() / (size_t)len;
  if (n < 20)
    throw DataError("span corruption: the English corpus holds only " + std::to_string(n) + " windows of " + std::to_string(len) +
                    " bytes");
  const size_t take = std::min<size_t>(n, (size_t)max_windows), stride = n / take;
  tasks::SpanCorruptionConfig sc;
  sc.noise_density = density, sc.mean_span_length = mean_span;
  sc.sentinel_top_id = tasks::ByteTokenizer{kSentinels}.sentinel_id(kSentinels - 1);
  sc.eos_id = tasks::special_ids::eos;
  std::mt19937_64 rng(seed);
  PretrainData p;
  for (auto* d : {&p.train, &p.val}) d->vocab_size = vocab_size(), d->pad_id = tasks::special_ids::pad;
  p.train.name = "english/span_corruption/train", p.val.name = "english/span_corruption/val";
  const size_t split = take * 95 / 100;
  for (size_t w = 0; w < take; w++) {
    const std::vector<int32_t> x = tasks::ByteTokenizer{}.encode(std::string_view(text).substr(w * stride * len, len));
    tasks::TokenObjective o = tasks::span_corruption(x, sc, rng);
    tasks::Example e;
    e.tokens = std::move(o.inputs), e.tokens2 = std::move(o.targets);
    tasks::Dataset& d = w < split ? p.train : p.val;
    d.max_len = std::max<int32_t>(d.max_len, (int32_t)e.tokens.size());
    d.examples.push_back(std::move(e));
  }
  return p;
}

}  // namespace pconv
