// tasks/digits.cpp - the 8x8 digits CSV reader, its fixed split and its patch tokens (see digits.h).
#include "tasks/digits.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <random>

#include "tasks/image.h"

namespace dl::tasks {

DigitImages parse_digits_csv(std::string_view text, const std::string& source) {
  constexpr int kFields = kDigitsSide * kDigitsSide + 1;
  DigitImages d;
  Lines lines(text);
  for (std::string_view line; lines.next(line);) {
    if (line.empty() && lines.at_end()) break;  // the newline after the last line
    const std::string where = lines.where(source);
    int field = 0;
    size_t at = 0;
    while (true) {
      const size_t comma = std::min(line.find(',', at), line.size());
      const std::string_view s = line.substr(at, comma - at);
      const int max = field < kFields - 1 ? kDigitsMaxPixel : 9;
      int v = -1;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (field < kFields && (ec != std::errc() || end != s.data() + s.size() || v < 0 || v > max))
        throw DataError(where + ": field " + std::to_string(field + 1) + ": expected " +
                        (field < kFields - 1 ? "a pixel, an integer 0..16" : "the label, an integer 0..9") + ", found '" +
                        std::string(s) + "'");
      if (field < kFields - 1) d.pixels.push_back((uint8_t)v);
      else if (field == kFields - 1) d.labels.push_back(v);
      field++;
      if (comma == line.size()) break;
      at = comma + 1;
    }
    if (field != kFields)
      throw DataError(where + ": expected " + std::to_string(kFields) +
                      " comma-separated integers (64 pixels 0..16, then the label 0..9), found " + std::to_string(field));
  }
  if (d.labels.empty()) throw DataError(source + ": no images (expected lines of 64 pixels and a label)");
  return d;
}

DigitImages read_digits(const std::string& path) {
  if (!std::filesystem::exists(path))
    throw DataError(path + ": the 8x8 digits file is missing" +
                    std::string(path == digits_default_path
                                    ? " (Debian's python3-sklearn ships it: apt-get install python3-sklearn, or scripts/setup.sh)"
                                    : ""));
  const std::vector<uint8_t> bytes = read_gz_file(path);  // zlib reads a plain file unchanged
  return parse_digits_csv(std::string_view((const char*)bytes.data(), bytes.size()), path);
}

DigitsSplit digits_split(const std::vector<int32_t>& labels) {
  std::vector<std::vector<int32_t>> by_class(10);
  for (size_t i = 0; i < labels.size(); i++) by_class.at(labels[i]).push_back((int32_t)i);
  std::mt19937_64 rng(kDigitsSplitSeed);
  DigitsSplit s;
  for (auto& idx : by_class) {
    for (size_t i = idx.size(); i > 1; i--) std::swap(idx[i - 1], idx[rng() % i]);  // Fisher-Yates, portable
    const size_t n = idx.size(), n_test = (n + 2) / 5, n_val = (n + 5) / 10;  // round(n / 5), round(n / 10)
    s.test.insert(s.test.end(), idx.begin(), idx.begin() + n_test);
    s.val.insert(s.val.end(), idx.begin() + n_test, idx.begin() + n_test + n_val);
    s.train.insert(s.train.end(), idx.begin() + n_test + n_val, idx.end());
  }
  for (auto* v : {&s.train, &s.val, &s.test}) std::sort(v->begin(), v->end());
  return s;
}

// One split's examples: patch x patch blocks as tokens, pixel / 16.
static Dataset digits_dataset(const DigitImages& d, std::vector<int32_t> idx, int64_t cap, int32_t p, const std::string& name) {
  if (cap > 0 && (int64_t)idx.size() > cap) idx.resize(cap);
  const int32_t S = kDigitsSide, blocks = S / p;
  Dataset out;
  out.name = name, out.feature_dim = p * p, out.num_classes = 10, out.max_len = blocks * blocks;
  for (int c = 0; c < 10; c++) out.class_names.push_back(std::to_string(c));
  for (int32_t i : idx) {
    Example e;
    e.label = d.labels[i];
    const uint8_t* img = d.pixels.data() + (size_t)i * S * S;
    for (int32_t by = 0; by < blocks; by++)
      for (int32_t bx = 0; bx < blocks; bx++)
        for (int32_t y = 0; y < p; y++)
          for (int32_t x = 0; x < p; x++) e.features.push_back(img[(by * p + y) * S + bx * p + x] / float(kDigitsMaxPixel));
    out.examples.push_back(std::move(e));
  }
  return out;
}

TaskData make_digits(const DigitsConfig& c) {
  if (c.patch != 1 && c.patch != 2 && c.patch != 4 && c.patch != 8)
    throw DataError("digits: patch " + std::to_string(c.patch) + " does not divide the 8x8 image (1, 2, 4 or 8)");
  const DigitImages d = read_digits(c.path.empty() ? digits_default_path : c.path);
  const DigitsSplit s = digits_split(d.labels);
  return {digits_dataset(d, s.train, c.max_train, c.patch, "digits/train"),
          digits_dataset(d, s.val, c.max_val, c.patch, "digits/val"),
          digits_dataset(d, s.test, c.max_test, c.patch, "digits/test")};
}

}  // namespace dl::tasks
