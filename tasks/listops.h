// tasks/listops.h - the LRA ListOps task: a generator following the LRA algorithm, the official TSV format,
// and the fixed ListOps vocabulary.
//
// What it is. ListOps (Nangia & Bowman 2018, as used by Long Range Arena, Tay et al. 2021) asks for the value
// (0-9) of a nested expression such as `[MAX 2 9 [MIN 4 7 ] 0 ]`. The generator follows
// google-research/long-range-arena lra_benchmark/data/listops.py:
//   - a node at depth < max_depth is an operator with probability 0.25 (VALUE_P), else a digit 0-9;
//     at max_depth it is always a digit; the root is at depth 1;
//   - an operator takes 2..max_args arguments, each a subtree; operators are MIN, MAX, MED, SM;
//   - MED is LRA's `int(np.median(args))`: the middle value for an odd count, and for an even count the mean
//     of the two middle values truncated toward zero, i.e. floor((a + b) / 2) since values are >= 0;
//   - SM is the sum modulo 10;
//   - "length" counts one per digit and two per operator (its `[OP` and its `]`), parentheses not counted;
//     a tree is kept only if min_len < length < max_len (strict, as in LRA);
//   - trees are de-duplicated (LRA keeps a Python set of trees), then the first num_train go to train, the
//     next num_val to val, the rest to test.
// Randomness comes from std::mt19937_64 through our own integer draws (not std::uniform_int_distribution,
// whose algorithm differs between standard libraries), so a seed gives the same data everywhere.
// Deliberate deviation, for speed only: a tree is abandoned as soon as its length reaches max_len; it would
// have been rejected anyway, and each attempt draws fresh randomness, so the accepted trees have the LRA
// distribution.
//
// Official files. LRA's writer prints every tree node with parentheses, e.g.
// `( ( [MAX 2 ) 9 ] )`; the reader here drops `(` and `)` (LRA's tfds tokenizer dropped every
// non-alphanumeric token, which also lost `]`; we keep `]` as S4 and later LRA ports do, because the
// closing brackets carry the tree structure). write_listops_tsv can write either form.
//
// Vocabulary (fixed, no training data needed): 0 pad, 1..10 the digits 0..9, 11 [MIN, 12 [MAX, 13 [MED,
// 14 [SM, 15 ]. Any other token is a DataError naming where it was found.
//
// What it is not: a batcher, and not the other LRA tasks.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tasks/dataset.h"

namespace dl::tasks {

struct ListOpsConfig {
  int64_t num_train = 96000;  // LRA sizes
  int64_t num_val = 2000;
  int64_t num_test = 2000;
  int32_t max_depth = 10;
  int32_t max_args = 10;
  int32_t min_len = 500;   // exclusive, as in LRA
  int32_t max_len = 2000;  // exclusive, as in LRA
  uint64_t seed = 0;
  bool parens = false;  // write the LRA parentheses into `source` (true reproduces the official files)
};

struct ListOpsSample {
  std::string source;  // e.g. "[MAX 2 9 [MIN 4 7 ] 0 ]"
  int32_t target = 0;  // value in 0..9
  int32_t length = 0;  // LRA length: digits + 2 per operator
  bool operator==(const ListOpsSample&) const = default;
};

namespace listops_vocab {
inline constexpr int32_t pad = 0;
inline constexpr int32_t digit0 = 1;  // digit d has id 1 + d
inline constexpr int32_t op_min = 11, op_max = 12, op_med = 13, op_sm = 14, close = 15;
inline constexpr int32_t size = 16;
}  // namespace listops_vocab

// `count` distinct samples from the LRA algorithm (throws DataError when the length window is empty or
// impossible to fill, e.g. after many attempts without a new tree).
std::vector<ListOpsSample> generate_listops(const ListOpsConfig& config, int64_t count);

// Value of an expression in either form (with or without parentheses), by an explicit stack, independent of
// the generator's recursion. Throws DataError (naming `where`) on malformed input.
int32_t evaluate_listops(std::string_view source, const std::string& where = "expression");

// Token ids for a source string; `(` and `)` are skipped. `where` goes into error messages ("file:line").
std::vector<int32_t> tokenize_listops(std::string_view source, const std::string& where = "expression");

// ---- the official TSV format: header `Source\tTarget`, then one `source\ttarget` line per sample ----------
void write_listops_tsv(const std::string& path, const std::vector<ListOpsSample>& samples);
// Parses a whole file held in memory; `file_name` is only used in messages. Bad header, column count,
// target outside 0..9 or an unknown token -> DataError "file:line: ...". Accepts \r\n line ends and a
// missing final newline.
std::vector<ListOpsSample> parse_listops_tsv(std::string_view content, const std::string& file_name);
std::vector<ListOpsSample> read_listops_tsv(const std::string& path);

// basic_{train,val,test}.tsv in `dir` (the names of the LRA release).
void write_listops_dir(const std::string& dir, const std::vector<ListOpsSample>& train, const std::vector<ListOpsSample>& val,
                       const std::vector<ListOpsSample>& test);

// The task: generated data, or the official files of a directory. Sequences are not truncated; Dataset::max_len
// is the longest token sequence (the generator guarantees < max_len).
TaskData make_listops(const ListOpsConfig& config);
TaskData load_listops_tsv(const std::string& dir);
Dataset listops_dataset(const std::string& name, const std::vector<ListOpsSample>& samples, const std::string& where_prefix);

}  // namespace dl::tasks
