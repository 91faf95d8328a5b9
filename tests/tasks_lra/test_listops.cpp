// tests/tasks_lra/test_listops.cpp - ListOps generator invariants, evaluator, tokenizer and TSV round trips.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "tasks/listops.h"
#include "tasks/registry.h"
#include "test_util.h"

namespace dl::tasks {
namespace {

using testing::data_error_message;
using testing::TempDir;
using testing::write_file;

// ---- an independent evaluator: recursive descent over the plain form, median as numpy computes it ----
struct RefParser {
  std::vector<std::string> toks;
  size_t pos = 0;
  int value() {
    const std::string t = toks.at(pos++);
    if (t.size() == 1 && isdigit(t[0])) return t[0] - '0';
    std::vector<int> args;
    while (toks.at(pos) != "]") args.push_back(value());
    ++pos;
    if (t == "[MIN") return *std::min_element(args.begin(), args.end());
    if (t == "[MAX") return *std::max_element(args.begin(), args.end());
    if (t == "[SM") {
      int s = 0;
      for (int a : args) s += a;
      return s % 10;
    }
    EXPECT_EQ(t, "[MED");
    std::sort(args.begin(), args.end());
    const size_t n = args.size();
    const double median = n % 2 ? args[n / 2] : (args[n / 2 - 1] + args[n / 2]) / 2.0;  // np.median
    return static_cast<int>(median);                                                    // int(...)
  }
};

std::vector<std::string> split_ws(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ' ') {
      if (!cur.empty()) out.push_back(cur), cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

int reference_value(const std::string& plain) {
  RefParser p{split_ws(plain)};
  const int v = p.value();
  EXPECT_EQ(p.pos, p.toks.size()) << "trailing tokens in " << plain;
  return v;
}

// LRA's to_string of its nested tuples ((((OP a0) a1) a2) ]) rebuilt from the plain form, to check the
// generator's parenthesised output character for character.
std::string lra_parens(const std::vector<std::string>& toks, size_t& pos) {
  const std::string t = toks[pos++];
  if (t.size() == 1) return t;
  std::string acc = t;
  bool first = true;
  while (toks[pos] != "]") {
    acc = "( " + acc + " " + lra_parens(toks, pos) + " )";
    first = false;
  }
  ++pos;
  (void)first;
  return "( " + acc + " ] )";
}

ListOpsConfig small_config(uint64_t seed) {
  ListOpsConfig c;
  c.seed = seed;
  c.min_len = 20;
  c.max_len = 200;
  c.num_train = 300;
  c.num_val = 50;
  c.num_test = 50;
  return c;
}

TEST(ListOps, ValuesMatchAnIndependentEvaluator) {
  const auto samples = generate_listops(small_config(1), 400);
  std::set<int> targets;
  for (const auto& s : samples) {
    ASSERT_EQ(s.target, reference_value(s.source)) << s.source;
    ASSERT_EQ(s.target, evaluate_listops(s.source));
    targets.insert(s.target);
  }
  EXPECT_EQ(targets.size(), 10u) << "all ten answers should occur in 400 samples";
}

TEST(ListOps, MedianOfAnEvenCountTruncatesLikeNumpy) {
  EXPECT_EQ(evaluate_listops("[MED 1 2 ]"), 1);      // np.median = 1.5 -> int 1
  EXPECT_EQ(evaluate_listops("[MED 8 9 0 7 ]"), 7);  // sorted 0 7 8 9 -> 7.5 -> 7
  EXPECT_EQ(evaluate_listops("[MED 3 1 2 ]"), 2);
  EXPECT_EQ(evaluate_listops("[SM 9 9 5 ]"), 3);
  EXPECT_EQ(evaluate_listops("[MAX 2 9 [MIN 4 7 ] 0 ]"), 9);
  EXPECT_EQ(evaluate_listops("( ( ( [MAX 2 ) 9 ) ] )"), 9);
}

TEST(ListOps, LengthsStayInsideTheExclusiveWindowAndTokensMatch) {
  const auto cfg = small_config(2);
  for (const auto& s : generate_listops(cfg, 300)) {
    EXPECT_GT(s.length, cfg.min_len);
    EXPECT_LT(s.length, cfg.max_len);
    const auto ids = tokenize_listops(s.source);
    EXPECT_EQ(static_cast<int32_t>(ids.size()), s.length);
    for (int32_t id : ids) EXPECT_TRUE(id > listops_vocab::pad && id < listops_vocab::size);
  }
}

TEST(ListOps, TreesRespectDepthAndArgumentLimits) {
  ListOpsConfig cfg = small_config(3);
  cfg.max_depth = 4;
  cfg.max_args = 3;
  cfg.min_len = 5;
  cfg.max_len = 60;
  for (const auto& s : generate_listops(cfg, 200)) {
    int depth = 1, max_depth = 1;  // the root is depth 1; digits inside an operator are one deeper
    std::vector<int> args;
    for (const auto& t : split_ws(s.source)) {
      if (t[0] == '[') {
        if (!args.empty()) ++args.back();
        args.push_back(0);
        max_depth = std::max(max_depth, depth);
        ++depth;
      } else if (t == "]") {
        EXPECT_GE(args.back(), 2);
        EXPECT_LE(args.back(), cfg.max_args);
        args.pop_back();
        --depth;
      } else {
        if (!args.empty()) ++args.back();
        max_depth = std::max(max_depth, depth);
      }
    }
    EXPECT_LE(max_depth, cfg.max_depth) << s.source;
  }
}

TEST(ListOps, SameSeedSameDataOtherSeedOtherData) {
  EXPECT_EQ(generate_listops(small_config(7), 100), generate_listops(small_config(7), 100));
  EXPECT_NE(generate_listops(small_config(7), 100), generate_listops(small_config(8), 100));
}

TEST(ListOps, SamplesAreDistinct) {
  ListOpsConfig cfg = small_config(4);
  cfg.min_len = 3;  // a small window makes repeats likely, so de-duplication is really exercised
  cfg.max_len = 8;
  const auto samples = generate_listops(cfg, 500);
  std::set<std::string> sources;
  for (const auto& s : samples) sources.insert(s.source);
  EXPECT_EQ(sources.size(), samples.size());
}

TEST(ListOps, ImpossibleWindowIsADataError) {
  ListOpsConfig cfg = small_config(5);
  cfg.max_depth = 1;  // only single digits (length 1) can be made
  cfg.min_len = 3;
  cfg.max_len = 10;
  const std::string msg = data_error_message([&] { generate_listops(cfg, 1); });
  EXPECT_NE(msg.find("no new tree"), std::string::npos) << msg;
}

TEST(ListOps, ParenthesisedFormIsLraToStringOfTheSameTree) {
  ListOpsConfig plain_cfg = small_config(9), parens_cfg = small_config(9);
  parens_cfg.parens = true;
  const auto plain = generate_listops(plain_cfg, 50);
  const auto parens = generate_listops(parens_cfg, 50);
  for (size_t i = 0; i < plain.size(); ++i) {
    const auto toks = split_ws(plain[i].source);
    size_t pos = 0;
    EXPECT_EQ(parens[i].source, lra_parens(toks, pos));
    EXPECT_EQ(tokenize_listops(parens[i].source), tokenize_listops(plain[i].source));
    EXPECT_EQ(parens[i].target, plain[i].target);
  }
}

TEST(ListOps, PaperLengthWindowIsFastEnough) {
  ListOpsConfig cfg;  // 500 < length < 2000 as in LRA
  cfg.seed = 11;
  const auto t0 = std::chrono::steady_clock::now();
  const auto samples = generate_listops(cfg, 200);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double mean_len = 0;
  for (const auto& s : samples) {
    ASSERT_GT(s.length, 500);
    ASSERT_LT(s.length, 2000);
    mean_len += s.length / 200.0;
  }
  EXPECT_LT(seconds, 5.0);
  RecordProperty("mean_length", std::to_string(mean_len));
  RecordProperty("seconds_for_200", std::to_string(seconds));
}

TEST(ListOps, MakeListOpsSplitsAndSizesTheDatasets) {
  const TaskData t = make_listops(small_config(12));
  EXPECT_EQ(t.train.examples.size(), 300u);
  EXPECT_EQ(t.val.examples.size(), 50u);
  EXPECT_EQ(t.test.examples.size(), 50u);
  EXPECT_EQ(t.train.vocab_size, 16);
  EXPECT_EQ(t.train.num_classes, 10);
  EXPECT_LT(t.train.max_len, 200);
  for (const auto& e : t.test.examples) EXPECT_TRUE(e.label >= 0 && e.label < 10);
}

TEST(ListOpsTsv, WriteThenReadGivesTheSameSamples) {
  TempDir dir("listops_tsv");
  const auto cfg = small_config(13);
  const auto all = generate_listops(cfg, 30);
  const std::vector<ListOpsSample> train(all.begin(), all.begin() + 20), val(all.begin() + 20, all.begin() + 25),
      test(all.begin() + 25, all.end());
  write_listops_dir(dir.str(), train, val, test);
  EXPECT_EQ(read_listops_tsv(dir.file("basic_train.tsv")), train);
  const TaskData t = load_listops_tsv(dir.str());
  ASSERT_EQ(t.val.examples.size(), 5u);
  EXPECT_EQ(t.val.examples[2].tokens, tokenize_listops(val[2].source));
  EXPECT_EQ(t.val.examples[2].label, val[2].target);
}

TEST(ListOpsTsv, ReadsTheOfficialParenthesisedFormAndCrlf) {
  const auto samples = parse_listops_tsv("Source\tTarget\r\n( ( ( [MAX 2 ) 9 ) ] )\t9\r\n( ( [SM 4 ) ] )\t4", "x.tsv");
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].length, 4);
  EXPECT_EQ(samples[1].target, 4);
}

TEST(ListOpsTsv, DamagedFilesNameFileAndLine) {
  TempDir dir("listops_bad");
  const std::string path = dir.file("basic_train.tsv");
  write_file(path, "Source\tTarget\n[MAX 1 2 ]\t2\n[MIN 1 2 ]\t1\textra\n");
  std::string msg = data_error_message([&] { read_listops_tsv(path); });
  EXPECT_NE(msg.find(path + ":3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected 2 tab-separated columns"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 3"), std::string::npos) << msg;

  msg = data_error_message([] { parse_listops_tsv("Source\tTarget\n[MAX 1 2 ]\t12\n", "t.tsv"); });
  EXPECT_NE(msg.find("t.tsv:2: Target must be a digit 0-9, found '12'"), std::string::npos) << msg;

  msg = data_error_message([] { parse_listops_tsv("Source\tTarget\n[MAX 1 2 ]\t2\n[AVG 1 2 ]\t1\n", "t.tsv"); });
  EXPECT_NE(msg.find("t.tsv:3: unknown ListOps token '[AVG'"), std::string::npos) << msg;

  msg = data_error_message([] { parse_listops_tsv("Input\tOutput\n", "t.tsv"); });
  EXPECT_NE(msg.find("t.tsv:1: expected the header"), std::string::npos) << msg;

  msg = data_error_message([] { parse_listops_tsv("Source\tTarget\n\n[MAX 1 ]\t1\n", "t.tsv"); });
  EXPECT_NE(msg.find("t.tsv:2: empty line"), std::string::npos) << msg;

  msg = data_error_message([&] { load_listops_tsv(dir.str() + "/missing"); });
  EXPECT_NE(msg.find("basic_train.tsv: file not found"), std::string::npos) << msg;
}

TEST(ListOpsEvaluator, MalformedExpressionsAreDataErrors) {
  EXPECT_NE(data_error_message([] { evaluate_listops("[MAX 1 2", "e"); }).find("not closed"), std::string::npos);
  EXPECT_NE(data_error_message([] { evaluate_listops("1 ]", "e"); }).find("without an open operator"), std::string::npos);
  EXPECT_NE(data_error_message([] { evaluate_listops("1 2", "e"); }).find("2 top-level values"), std::string::npos);
  EXPECT_NE(data_error_message([] { evaluate_listops("[MIN ]", "e"); }).find("no arguments"), std::string::npos);
}

// A model is sized from the training split's max_len; with 16 training examples of random length a test example is
// longer than every training one (seed 0 here), and the task must say so in every split.
TEST(ListOpsTask, EverySplitStatesTheLongestSequenceOfAllThree) {
  const TaskData t = make_task("listops", {32, 16, 8, 8, 0, ""});
  int32_t longest = 0, longest_train = 0;
  for (const Dataset* d : {&t.train, &t.val, &t.test})
    for (auto& e : d->examples) longest = std::max<int32_t>(longest, (int32_t)e.tokens.size());
  for (auto& e : t.train.examples) longest_train = std::max<int32_t>(longest_train, (int32_t)e.tokens.size());
  EXPECT_LT(longest_train, longest) << "the case this test is about: a longer sequence outside the training split";
  EXPECT_EQ(t.train.max_len, longest);
  EXPECT_EQ(t.val.max_len, longest);
  EXPECT_EQ(t.test.max_len, longest);
}

}  // namespace
}  // namespace dl::tasks
