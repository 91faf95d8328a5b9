// tests/tasks_gen/test_digits.cpp - the 8x8 digits of python3-sklearn (tasks/digits.h): the packaged file's shapes and
// labels, the fixed split (disjoint, covers all 1797, balanced, the same every time), the patch tokens, and bad files
// named by file, line and field.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <set>

#include "tasks/digits.h"
#include "data_error_of.h"

using namespace dl::tasks;
namespace fs = std::filesystem;

namespace {

// A line of 64 pixels and a label: pixel i = (i + shift) % 17.
std::string csv_line(int shift, int label) {
  std::string s;
  for (int i = 0; i < 64; i++) s += std::to_string((i + shift) % 17) + ",";
  return s + std::to_string(label) + "\n";
}

bool have_packaged() {
  if (fs::exists(digits_default_path)) return true;
  return false;
}

}  // namespace

TEST(Digits, PackagedFileShapesAndLabels) {
  if (!have_packaged()) GTEST_SKIP() << digits_default_path << " missing (apt-get install python3-sklearn)";
  const DigitImages d = read_digits(digits_default_path);
  ASSERT_EQ(d.size(), 1797u);
  ASSERT_EQ(d.pixels.size(), 1797u * 64);
  int counts[10] = {};
  for (int32_t l : d.labels) {
    ASSERT_GE(l, 0);
    ASSERT_LT(l, 10);
    counts[l]++;
  }
  for (int c = 0; c < 10; c++) EXPECT_GE(counts[c], 170) << c;  // 174..183 per class
  for (uint8_t p : d.pixels) ASSERT_LE(p, 16);
  EXPECT_EQ(d.labels[0], 0);  // the file's first three lines are a 0, a 1 and a 2
  EXPECT_EQ(d.labels[1], 1);
  EXPECT_EQ(d.labels[2], 2);
}

TEST(Digits, SplitIsFixedDisjointCompleteAndBalanced) {
  if (!have_packaged()) GTEST_SKIP() << digits_default_path << " missing (apt-get install python3-sklearn)";
  const DigitImages d = read_digits(digits_default_path);
  const DigitsSplit s = digits_split(d.labels);
  EXPECT_EQ(s.train.size(), 1259u);
  EXPECT_EQ(s.val.size(), 179u);
  EXPECT_EQ(s.test.size(), 359u);
  std::set<int32_t> all;
  for (auto* v : {&s.train, &s.val, &s.test})
    for (int32_t i : *v) EXPECT_TRUE(all.insert(i).second) << "image " << i << " is in two splits";
  EXPECT_EQ(all.size(), 1797u);
  EXPECT_EQ(*all.begin(), 0);
  EXPECT_EQ(*all.rbegin(), 1796);
  int test_counts[10] = {};
  for (int32_t i : s.test) test_counts[d.labels[i]]++;
  for (int c = 0; c < 10; c++) EXPECT_NEAR(test_counts[c], 36, 1) << c;
  const DigitsSplit again = digits_split(d.labels);
  EXPECT_EQ(again.test, s.test);
  EXPECT_EQ(again.val, s.val);
}

TEST(Digits, PatchTokens) {
  const std::string dir = (fs::temp_directory_path() / "dl_test_digits").string();
  fs::create_directories(dir);
  const std::string path = dir + "/digits.csv";
  std::ofstream(path) << csv_line(0, 3) << csv_line(5, 7) << csv_line(9, 1);
  DigitsConfig c;
  c.path = path;
  for (int p : {1, 2, 4, 8}) {
    c.patch = p;
    const TaskData t = make_digits(c);
    const size_t n = t.train.examples.size() + t.val.examples.size() + t.test.examples.size();
    EXPECT_EQ(n, 3u);
    EXPECT_EQ(t.train.feature_dim, p * p);
    EXPECT_EQ(t.train.max_len, (8 / p) * (8 / p));
    EXPECT_EQ(t.train.num_classes, 10);
    for (auto* s : {&t.train, &t.val, &t.test})
      for (auto& e : s->examples) ASSERT_EQ(e.features.size(), 64u);
  }
  // patch 2, the first image: token 1 is the block at rows 0-1, columns 2-3 = pixels 2, 3, 10, 11 (/ 16)
  c.patch = 2;
  const DigitImages d = read_digits(path);
  EXPECT_EQ(d.labels, (std::vector<int32_t>{3, 7, 1}));
  const TaskData t = make_digits(c);
  const Dataset* with_first = nullptr;
  for (auto* s : {&t.train, &t.val, &t.test})
    for (auto& e : s->examples)
      if (e.label == 3) with_first = s;
  ASSERT_NE(with_first, nullptr);
  const Example& e = with_first->examples.front();
  EXPECT_FLOAT_EQ(e.features[4 + 0], 2 / 16.f);
  EXPECT_FLOAT_EQ(e.features[4 + 1], 3 / 16.f);
  EXPECT_FLOAT_EQ(e.features[4 + 2], 10 / 16.f);
  EXPECT_FLOAT_EQ(e.features[4 + 3], 11 / 16.f);
  c.patch = 3;
  EXPECT_NE(dl::test::data_error_of([&] { make_digits(c); }).find("patch 3 does not divide the 8x8 image"), std::string::npos);
}

TEST(Digits, BadFilesAreNamed) {
  const std::string dir = (fs::temp_directory_path() / "dl_test_digits").string();
  fs::create_directories(dir);
  const std::string path = dir + "/bad.csv";
  std::string short_line = "1";  // 63 fields: a pixel short, and no label
  for (int i = 1; i < 63; i++) short_line += ",1";
  short_line += "\n";
  std::ofstream(path) << csv_line(0, 1) << short_line;
  std::string err = dl::test::data_error_of([&] { read_digits(path); });
  EXPECT_NE(err.find(path + ":2: expected 65 comma-separated integers"), std::string::npos) << err;
  EXPECT_NE(err.find("found 63"), std::string::npos) << err;
  std::string bad_pixel = csv_line(0, 1);
  bad_pixel.replace(0, 1, "17");
  std::ofstream(path) << bad_pixel;
  err = dl::test::data_error_of([&] { read_digits(path); });
  EXPECT_NE(err.find(path + ":1: field 1: expected a pixel, an integer 0..16, found '17'"), std::string::npos) << err;
  std::string bad_label = csv_line(0, 1);
  bad_label.replace(bad_label.size() - 2, 1, "x");
  std::ofstream(path) << csv_line(1, 2) << csv_line(2, 3) << bad_label;
  err = dl::test::data_error_of([&] { read_digits(path); });
  EXPECT_NE(err.find(path + ":3: field 65: expected the label, an integer 0..9, found 'x'"), std::string::npos) << err;
  std::ofstream(path) << "";
  EXPECT_NE(dl::test::data_error_of([&] { read_digits(path); }).find("no images"), std::string::npos);
  err = dl::test::data_error_of([&] { read_digits(dir + "/missing.csv.gz"); });
  EXPECT_NE(err.find("missing.csv.gz: the 8x8 digits file is missing"), std::string::npos) << err;
  // the packaged path names its package
  DigitsConfig c;
  c.path = "";
  if (!have_packaged())
    EXPECT_NE(dl::test::data_error_of([&] { make_digits(c); }).find("apt-get install python3-sklearn"), std::string::npos);
}
