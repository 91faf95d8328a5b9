// tasks/listops.cpp - ListOps generator (LRA algorithm), stack evaluator, tokenizer and TSV reader/writer.
// The rules and every deliberate deviation from LRA are documented in listops.h.
#include "tasks/listops.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <unordered_set>

namespace dl::tasks {

namespace {

// Uniform integer in [0, n) by rejection, so the draw is exact and the same on every standard library.
uint64_t rand_below(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t x;
  // clang-format off
  do x = rng(); while (x >= limit);
  // clang-format on
  return x % n;
}

// Uniform double in [0, 1) from the top 53 bits, like Python's random.random().
double rand_unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

enum class Op { min, max, med, sm };
constexpr const char* op_token[] = {"[MIN", "[MAX", "[MED", "[SM"};
constexpr double operator_probability = 0.25;  // LRA's VALUE_P: a node is a leaf when random() > 0.25

int32_t apply_op(Op op, std::vector<int32_t> args) {
  switch (op) {
    case Op::min: return *std::min_element(args.begin(), args.end());
    case Op::max: return *std::max_element(args.begin(), args.end());
    case Op::med: {
      // int(np.median(args)): even counts average the two middle values and truncate (all values >= 0).
      std::sort(args.begin(), args.end());
      const size_t n = args.size();
      return n % 2 == 1 ? args[n / 2] : (args[n / 2 - 1] + args[n / 2]) / 2;
    }
    case Op::sm: {
      int64_t sum = 0;
      for (int32_t a : args) sum += a;
      return static_cast<int32_t>(sum % 10);
    }
  }
  return 0;
}

// One attempt at a tree: writes the source while it recurses and returns the node's value.
struct TreeWriter {
  std::mt19937_64& rng;
  const ListOpsConfig& config;
  std::string out;
  int32_t length = 0;
  bool too_long = false;

  int32_t node(int32_t depth) {
    if (too_long) return 0;
    const bool is_operator = depth < config.max_depth && rand_unit(rng) <= operator_probability;
    if (!is_operator) {
      const auto value = static_cast<int32_t>(rand_below(rng, 10));
      out += static_cast<char>('0' + value);
      length += 1;
      too_long = length >= config.max_len;
      return value;
    }
    // LRA draws the argument count, then the subtrees, then the operator; drawing the operator first (we must
    // print it before the arguments) gives the same distribution.
    const auto num_args = static_cast<int32_t>(2 + rand_below(rng, config.max_args - 1));
    const auto op = static_cast<Op>(rand_below(rng, 4));
    length += 2;
    // With parentheses LRA prints ((((OP a0) a1) a2) ]): num_args + 1 opening parentheses up front.
    if (config.parens)
      for (int32_t k = 0; k <= num_args; ++k) out += "( ";
    out += op_token[static_cast<int>(op)];
    std::vector<int32_t> args;
    for (int32_t k = 0; k < num_args && !too_long; ++k) {
      out += ' ';
      args.push_back(node(depth + 1));
      if (config.parens) out += " )";
    }
    out += config.parens ? " ] )" : " ]";
    too_long = too_long || length >= config.max_len;
    return too_long ? 0 : apply_op(op, std::move(args));
  }
};

void check_config(const ListOpsConfig& c) {
  if (c.max_depth < 1 || c.max_args < 2 || c.min_len < 0 || c.max_len <= c.min_len + 1)
    throw DataError("ListOps config: need max_depth >= 1, max_args >= 2 and min_len < length < max_len possible; got "
                    "max_depth=" +
                    std::to_string(c.max_depth) + " max_args=" + std::to_string(c.max_args) +
                    " min_len=" + std::to_string(c.min_len) + " max_len=" + std::to_string(c.max_len));
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Calls f(token) for each whitespace-separated token.
template <class F> void for_each_token(std::string_view s, F&& f) {
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    const size_t start = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > start) f(s.substr(start, i - start));
  }
}

int32_t token_id(std::string_view tok, const std::string& where) {
  if (tok.size() == 1 && tok[0] >= '0' && tok[0] <= '9') return listops_vocab::digit0 + (tok[0] - '0');
  if (tok == "]") return listops_vocab::close;
  for (int k = 0; k < 4; ++k)
    if (tok == op_token[k]) return listops_vocab::op_min + k;
  throw DataError(where + ": unknown ListOps token '" + std::string(tok.substr(0, 40)) +
                  "' (expected a digit 0-9, [MIN, [MAX, [MED, [SM, ], or a parenthesis)");
}

}  // namespace

std::vector<ListOpsSample> generate_listops(const ListOpsConfig& config, int64_t count) {
  check_config(config);
  std::mt19937_64 rng(config.seed);
  std::vector<ListOpsSample> samples;
  std::unordered_set<std::string> seen;
  // Give up when a long run of attempts adds nothing: the length window is too narrow or nearly exhausted.
  const int64_t max_fruitless_attempts = 2'000'000;
  int64_t fruitless = 0;
  while (static_cast<int64_t>(samples.size()) < count) {
    TreeWriter w{rng, config, {}, 0, false};
    const int32_t value = w.node(1);
    const bool accepted = !w.too_long && w.length > config.min_len && w.length < config.max_len && seen.insert(w.out).second;
    if (accepted) {
      samples.push_back({std::move(w.out), value, w.length});
      fruitless = 0;
    } else if (++fruitless > max_fruitless_attempts) {
      throw DataError("generate_listops: no new tree in " + std::to_string(max_fruitless_attempts) + " attempts after " +
                      std::to_string(samples.size()) + " of " + std::to_string(count) + " samples; widen [min_len, max_len] = [" +
                      std::to_string(config.min_len) + ", " + std::to_string(config.max_len) + "] or raise max_depth/max_args");
    }
  }
  return samples;
}

int32_t evaluate_listops(std::string_view source, const std::string& where) {
  struct Frame {
    int32_t op;
    std::vector<int32_t> args;
  };
  std::vector<Frame> stack;
  std::vector<int32_t> top_level;
  for_each_token(source, [&](std::string_view tok) {
    if (tok == "(" || tok == ")") return;
    const int32_t id = token_id(tok, where);
    if (id >= listops_vocab::op_min && id <= listops_vocab::op_sm) {
      stack.push_back({id, {}});
      return;
    }
    int32_t value;
    if (id == listops_vocab::close) {
      if (stack.empty()) throw DataError(where + ": ']' without an open operator");
      Frame f = std::move(stack.back());
      stack.pop_back();
      if (f.args.empty()) throw DataError(where + ": operator with no arguments");
      value = apply_op(static_cast<Op>(f.op - listops_vocab::op_min), std::move(f.args));
    } else {
      value = id - listops_vocab::digit0;
    }
    (stack.empty() ? top_level : stack.back().args).push_back(value);
  });
  if (!stack.empty()) throw DataError(where + ": " + std::to_string(stack.size()) + " operator(s) not closed by ']'");
  if (top_level.size() != 1)
    throw DataError(where + ": expected one expression, found " + std::to_string(top_level.size()) + " top-level values");
  return top_level[0];
}

std::vector<int32_t> tokenize_listops(std::string_view source, const std::string& where) {
  std::vector<int32_t> ids;
  for_each_token(source, [&](std::string_view tok) {
    if (tok != "(" && tok != ")") ids.push_back(token_id(tok, where));
  });
  return ids;
}

void write_listops_tsv(const std::string& path, const std::vector<ListOpsSample>& samples) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw DataError(path + ": cannot open for writing");
  f << "Source\tTarget\n";
  for (const auto& s : samples) f << s.source << '\t' << s.target << '\n';
  if (!f) throw DataError(path + ": write failed");
}

std::vector<ListOpsSample> parse_listops_tsv(std::string_view content, const std::string& file_name) {
  std::vector<ListOpsSample> samples;
  Lines lines(content);
  for (std::string_view line; lines.next(line);) {
    const std::string where = lines.where(file_name);
    if (lines.number() == 1) {
      if (line != "Source\tTarget")
        throw DataError(where + ": expected the header 'Source<TAB>Target', found '" + std::string(line.substr(0, 60)) + "'");
      continue;
    }
    if (line.empty()) {
      if (lines.at_end()) break;  // a blank last line
      throw DataError(where + ": empty line");
    }
    const size_t tab = line.find('\t');
    const size_t columns = 1 + std::count(line.begin(), line.end(), '\t');
    if (columns != 2)
      throw DataError(where + ": expected 2 tab-separated columns (Source, Target), found " + std::to_string(columns));
    const std::string_view target = line.substr(tab + 1);
    if (target.size() != 1 || target[0] < '0' || target[0] > '9')
      throw DataError(where + ": Target must be a digit 0-9, found '" + std::string(target.substr(0, 20)) + "'");
    ListOpsSample s;
    s.source = std::string(line.substr(0, tab));
    s.target = target[0] - '0';
    s.length = static_cast<int32_t>(tokenize_listops(s.source, where).size());
    if (s.length == 0) throw DataError(where + ": empty Source");
    samples.push_back(std::move(s));
  }
  if (lines.number() == 0) throw DataError(file_name + ":1: empty file, expected the header 'Source<TAB>Target'");
  return samples;
}

std::vector<ListOpsSample> read_listops_tsv(const std::string& path) { return parse_listops_tsv(read_file(path), path); }

void write_listops_dir(const std::string& dir, const std::vector<ListOpsSample>& train, const std::vector<ListOpsSample>& val,
                       const std::vector<ListOpsSample>& test) {
  std::filesystem::create_directories(dir);
  write_listops_tsv(dir + "/basic_train.tsv", train);
  write_listops_tsv(dir + "/basic_val.tsv", val);
  write_listops_tsv(dir + "/basic_test.tsv", test);
}

Dataset listops_dataset(const std::string& name, const std::vector<ListOpsSample>& samples, const std::string& where_prefix) {
  Dataset d;
  d.name = name;
  d.vocab_size = listops_vocab::size;
  d.num_classes = 10;
  d.pad_id = listops_vocab::pad;
  for (int k = 0; k < 10; ++k) d.class_names.push_back(std::to_string(k));
  d.examples.reserve(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    Example e;
    e.tokens = tokenize_listops(samples[i].source, where_prefix + " sample " + std::to_string(i));
    e.label = samples[i].target;
    d.max_len = std::max<int32_t>(d.max_len, static_cast<int32_t>(e.tokens.size()));
    d.examples.push_back(std::move(e));
  }
  return d;
}

TaskData make_listops(const ListOpsConfig& config) {
  const auto all = generate_listops(config, config.num_train + config.num_val + config.num_test);
  const auto train_end = all.begin() + config.num_train, val_end = train_end + config.num_val;
  TaskData t;
  t.train = listops_dataset("listops/train", {all.begin(), train_end}, "generated");
  t.val = listops_dataset("listops/val", {train_end, val_end}, "generated");
  t.test = listops_dataset("listops/test", {val_end, all.end()}, "generated");
  return t;
}

TaskData load_listops_tsv(const std::string& dir) {
  TaskData t;
  const std::string split_names[3] = {"train", "val", "test"};
  Dataset* outs[3] = {&t.train, &t.val, &t.test};
  for (int k = 0; k < 3; ++k) {
    const std::string path = dir + "/basic_" + split_names[k] + ".tsv";
    if (!std::filesystem::exists(path))
      throw DataError(path + ": file not found (the LRA release names it basic_" + split_names[k] + ".tsv)");
    *outs[k] = listops_dataset("listops/" + split_names[k], read_listops_tsv(path), path);
  }
  return t;
}

}  // namespace dl::tasks
