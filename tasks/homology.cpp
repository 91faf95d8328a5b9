// tasks/homology.cpp - the HMMER3 text reader, the core-model sampler and the family-recognition task (see homology.h).
#include "tasks/homology.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>

#include "tasks/image.h"

namespace dl::tasks {

namespace {

namespace fs = std::filesystem;

std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) i++;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') j++;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

// The next line that is not blank, split into fields; DataError at the end of the text.
struct Reader {
  Lines lines;
  std::string source;
  std::string where() const { return lines.where(source); }
  std::vector<std::string_view> next(const char* expecting) {
    for (std::string_view line; lines.next(line);) {
      auto f = fields_of(line);
      if (!f.empty()) return f;
    }
    throw DataError(source + ":" + std::to_string(lines.number()) + ": the file ends where " + expecting + " was expected");
  }
};

// "-ln p" or "*" -> p
double probability(std::string_view s, const Reader& r, const char* what) {
  if (s == "*") return 0.0;
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v) || v < 0)
    throw DataError(r.where() + ": " + what + ": expected a score -ln(p) >= 0 or '*', found '" + std::string(s) + "'");
  return std::exp(-v);
}

template <size_t N>
std::array<double, N> distribution(const std::vector<std::string_view>& f, size_t from, const Reader& r, const std::string& what) {
  if (f.size() < from + N)
    throw DataError(r.where() + ": " + what + ": expected " + std::to_string(N) + " values, found " +
                    std::to_string(f.size() > from ? f.size() - from : 0));
  std::array<double, N> p{};
  double sum = 0;
  for (size_t i = 0; i < N; i++) sum += p[i] = probability(f[from + i], r, what.c_str());
  if (!(sum > 0)) throw DataError(r.where() + ": " + what + ": every probability is 0");
  for (auto& x : p) x /= sum;
  return p;
}

// Transitions come in three groups that each sum to 1: out of M (MM MI MD), out of I (IM II), out of D (DM DD).
std::array<double, 7> transitions(const std::vector<std::string_view>& f, const Reader& r, const std::string& what) {
  if (f.size() != 7) throw DataError(r.where() + ": " + what + ": expected 7 transition values, found " + std::to_string(f.size()));
  std::array<double, 7> t{};
  for (int i = 0; i < 7; i++) t[i] = probability(f[i], r, what.c_str());
  for (auto [a, b] : {std::pair{kMM, kMD + 1}, {kIM, kII + 1}, {kDM, kDD + 1}}) {
    double sum = 0;
    for (int i = a; i < b; i++) sum += t[i];
    if (!(sum > 0)) throw DataError(r.where() + ": " + what + ": the transitions out of one state are all 0");
    for (int i = a; i < b; i++) t[i] /= sum;
  }
  return t;
}

ProfileHmm parse_one(Reader& r, std::vector<std::string_view> first) {
  ProfileHmm h;
  if (!first[0].starts_with("HMMER3/"))
    throw DataError(r.where() + ": expected a HMMER3 header line ('HMMER3/f ...'), found '" + std::string(first[0]) + "'");
  std::string alphabet;
  bool have_length = false;
  for (auto f = r.next("the header or the 'HMM' line"); f[0] != "HMM"; f = r.next("the header or the 'HMM' line")) {
    if (f[0] == "NAME" && f.size() >= 2) h.name = f[1];
    if (f[0] == "ALPH" && f.size() >= 2) alphabet = f[1];
    if (f[0] == "LENG") {
      const std::string_view v_text = f.size() >= 2 ? f[1] : std::string_view("");
      int v = 0;
      auto [end, ec] = std::from_chars(v_text.data(), v_text.data() + v_text.size(), v);
      if (ec != std::errc() || end != v_text.data() + v_text.size() || v < 1 || v > 100000)
        throw DataError(r.where() + ": LENG: expected a model length 1..100000, found '" + std::string(v_text) + "'");
      h.length = v, have_length = true;
    }
  }
  const std::string at = r.where();
  if (h.name.empty()) throw DataError(at + ": the model has no NAME line before 'HMM'");
  if (!have_length) throw DataError(at + ": model " + h.name + " has no LENG line before 'HMM'");
  if (alphabet != "amino")
    throw DataError(at + ": model " + h.name + ": ALPH '" + alphabet + "', expected 'amino' (only amino-acid models are read)");
  r.next("the transition header (m->m m->i ...)");
  auto f = r.next("node 0's insert emissions");
  if (f[0] == "COMPO") f = r.next("node 0's insert emissions");
  h.match.assign(h.length + 1, {}), h.insert.assign(h.length + 1, {}), h.trans.assign(h.length + 1, {});
  h.insert[0] = distribution<kAminoAcids>(f, 0, r, "node 0 insert emissions");
  h.trans[0] = transitions(r.next("node 0's transitions"), r, "node 0 transitions");
  for (int32_t k = 1; k <= h.length; k++) {
    const std::string node = "node " + std::to_string(k);
    f = r.next((node + "'s match emissions").c_str());
    if (f[0] != std::to_string(k))
      throw DataError(r.where() + ": expected the match emission line of " + node + " of " + std::to_string(h.length) +
                      " (model " + h.name + "), found '" + std::string(f[0]) + "'");
    h.match[k] = distribution<kAminoAcids>(f, 1, r, node + " match emissions");
    if (f.size() > 1 + kAminoAcids + 5)
      throw DataError(r.where() + ": " + node + " match emissions: expected 20 values and at most 5 annotations, found " +
                      std::to_string(f.size() - 1) + " fields");
    f = r.next((node + "'s insert emissions").c_str());
    if (f.size() != kAminoAcids)
      throw DataError(r.where() + ": " + node + " insert emissions: expected 20 values, found " + std::to_string(f.size()));
    h.insert[k] = distribution<kAminoAcids>(f, 0, r, node + " insert emissions");
    h.trans[k] = transitions(r.next((node + "'s transitions").c_str()), r, node + " transitions");
  }
  f = r.next("'//' after the last node");
  if (f[0] != "//") throw DataError(r.where() + ": expected '//' after node " + std::to_string(h.length) + ", found '" + std::string(f[0]) + "'");
  return h;
}

double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

template <size_t N> int draw(const std::array<double, N>& p, int from, int to, std::mt19937_64& rng) {
  double u = uniform01(rng), acc = 0;
  for (int i = from; i < to; i++)
    if (u < (acc += p[i])) return i;
  for (int i = to - 1; i >= from; i--)  // rounding left u above the sum: the last possible outcome
    if (p[i] > 0) return i;
  return from;
}

}  // namespace

std::vector<ProfileHmm> parse_hmmer3(std::string_view text, const std::string& source) {
  Reader r{Lines(text), source};
  std::vector<ProfileHmm> out;
  while (true) {
    std::vector<std::string_view> f;
    for (std::string_view line; f.empty() && r.lines.next(line);) f = fields_of(line);
    if (f.empty()) break;
    out.push_back(parse_one(r, f));
  }
  if (out.empty()) throw DataError(source + ": no HMMER3 model in the file");
  return out;
}

std::vector<ProfileHmm> read_hmmer3(const std::string& path) {
  if (!fs::exists(path))
    throw DataError(path + ": profile HMM file is missing" +
                    std::string(std::string_view(path).starts_with(hmmer_examples_dir)
                                    ? " (Debian's hmmer-examples ships it: apt-get install hmmer-examples, or scripts/setup.sh)"
                                    : ""));
  const std::vector<uint8_t> bytes = read_gz_file(path);  // zlib reads a plain file unchanged
  return parse_hmmer3(std::string_view((const char*)bytes.data(), bytes.size()), path);
}

std::vector<int32_t> emit_sequence(const ProfileHmm& h, std::mt19937_64& rng) {
  enum State { M, I, D };
  std::vector<int32_t> seq;
  const size_t cap = 4 * (size_t)h.length + 100;
  State s = M;  // node 0's "match" state is the begin state B: it emits nothing
  int32_t k = 0;
  while (seq.size() < cap) {
    if (s == M && k > 0) seq.push_back(draw(h.match[k], 0, kAminoAcids, rng));
    if (s == I) seq.push_back(draw(h.insert[k], 0, kAminoAcids, rng));
    const auto& t = h.trans[k];
    const int next = s == M ? draw(t, kMM, kMD + 1, rng) : s == I ? draw(t, kIM, kII + 1, rng) : draw(t, kDM, kDD + 1, rng);
    if (next == kMI || next == kII) {
      s = I;  // stay at node k
      continue;
    }
    if (k == h.length) break;  // M, I or D of the last node: to the end state
    k++;
    s = (next == kMD || next == kDD) ? D : M;
  }
  return seq;
}

const std::vector<std::pair<std::string, std::string>>& hmmer_example_families() {
  static const std::vector<std::pair<std::string, std::string>> f = {
      {"RRM_1", "testsuite/RRM_1.hmm.gz"},       {"fn3", "tutorial/fn3.hmm"},
      {"2OG-FeII_Oxy_3", "testsuite/2OG-FeII_Oxy_3.hmm.gz"}, {"Caudal_act", "testsuite/Caudal_act.hmm.gz"},
      {"globins4", "tutorial/globins4.hmm"},     {"Pkinase", "tutorial/Pkinase.hmm"},
      {"LuxC", "testsuite/LuxC.hmm.gz"},         {"Patched", "testsuite/Patched.hmm.gz"},
      {"SMC_N", "testsuite/SMC_N.hmm.gz"}};
  return f;
}

std::vector<ProfileHmm> homology_families(const HomologyConfig& c) {
  std::vector<ProfileHmm> all;
  auto add = [&](const std::string& path) {
    for (auto& h : read_hmmer3(path)) all.push_back(std::move(h));
  };
  if (c.path.empty()) {
    for (auto& [name, rel] : hmmer_example_families()) add(std::string(hmmer_examples_dir) + "/" + rel);
  } else if (fs::is_directory(c.path)) {
    std::vector<std::string> files;
    for (auto& e : fs::directory_iterator(c.path)) {
      const std::string p = e.path().string();
      if (p.ends_with(".hmm") || p.ends_with(".hmm.gz")) files.push_back(p);
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) throw DataError(c.path + ": no .hmm or .hmm.gz files in the folder");
    for (auto& p : files) add(p);
  } else {
    add(c.path);
  }
  if (c.families.empty()) return all;
  std::vector<ProfileHmm> chosen;
  for (auto& name : c.families) {
    auto it = std::find_if(all.begin(), all.end(), [&](const ProfileHmm& h) { return h.name == name; });
    if (it == all.end()) {
      std::string known;
      for (auto& h : all) known += (known.empty() ? "" : ", ") + h.name;
      throw DataError("homology: no family '" + name + "' (found: " + known + ")");
    }
    chosen.push_back(*it);
  }
  return chosen;
}

Dataset homology_dataset(const std::vector<ProfileHmm>& families, int64_t size, int32_t window, uint64_t seed,
                         const std::string& name) {
  if (families.size() < 2) throw DataError(name + ": need at least 2 families, found " + std::to_string(families.size()));
  if (window < 1) throw DataError(name + ": window must be >= 1, found " + std::to_string(window));
  std::array<double, kAminoAcids> background{};  // the flanks' residues: the families' mean node-0 insert emissions
  for (auto& h : families)
    for (int a = 0; a < kAminoAcids; a++) background[a] += h.insert[0][a] / families.size();
  Dataset d;
  d.name = name, d.vocab_size = kAminoAcids, d.num_classes = (int32_t)families.size(), d.max_len = window;
  for (auto& h : families) d.class_names.push_back(h.name);
  std::mt19937_64 rng(seed);
  const int64_t per_family = size / (int64_t)families.size();
  for (int64_t i = 0; i < per_family; i++)
    for (size_t f = 0; f < families.size(); f++) {  // interleaved, so a capped split keeps every family
      std::vector<int32_t> domain = emit_sequence(families[f], rng);
      Example e;
      e.label = (int32_t)f;
      if ((int64_t)domain.size() >= window) {
        const size_t at = rng() % (domain.size() - window + 1);
        e.tokens.assign(domain.begin() + at, domain.begin() + at + window);
      } else {
        const size_t flank = window - domain.size(), left = rng() % (flank + 1);
        for (size_t j = 0; j < left; j++) e.tokens.push_back(draw(background, 0, kAminoAcids, rng));
        e.tokens.insert(e.tokens.end(), domain.begin(), domain.end());
        while ((int32_t)e.tokens.size() < window) e.tokens.push_back(draw(background, 0, kAminoAcids, rng));
      }
      d.examples.push_back(std::move(e));
    }
  return d;
}

TaskData make_homology(const HomologyConfig& c) {
  const std::vector<ProfileHmm> families = homology_families(c);
  const uint64_t s = c.seed * 1000;
  return {homology_dataset(families, c.train_size, c.window, s + 1, "homology/train"),
          homology_dataset(families, c.val_size, c.window, s + 2, "homology/val"),
          homology_dataset(families, c.test_size, c.window, s + 3, "homology/test")};
}

}  // namespace dl::tasks
