// tasks/digits.h - the 8x8 handwritten digits (the UCI "optdigits" test set as scikit-learn ships it), FPT's
// stand-in for MNIST at its real scale of handwriting rather than Fashion-MNIST's clothes.
//
// What it is.
//  - The file: Debian's python3-sklearn installs sklearn/datasets/data/digits.csv.gz (digits_default_path below),
//    1797 lines, each 65 comma-separated integers: 64 pixels in row-major order, each 0..16 (the count of set
//    pixels in a 4x4 block of the original 32x32 bitmap), then the label 0..9. It is read here in C++ with zlib
//    (read_gz_file, tasks/image.h); no Python runs. A missing file is a DataError that names the package; a bad
//    line names the file, the line, and what was expected and found.
//  - The split is fixed, the same for every run and seed: per class, the images of that class in file order are
//    shuffled by a Fisher-Yates shuffle driven by std::mt19937_64(kDigitsSplitSeed); the first round(n_c / 5) go to
//    test, the next round(n_c / 10) to validation, the rest to train (on the packaged file: 1259 / 179 / 359). Each
//    split lists its images in file order. So the three splits are disjoint, cover every image, and keep the
//    classes balanced; a cell's seed changes only its initialisation and batch order.
//  - Tokens: patch x patch pixel blocks, row-major blocks and row-major pixels inside a block (as image.h's
//    Fashion-MNIST patches), each pixel / 16 as a float. The default patch is 2: 16 tokens of 4 values. Patch 4
//    would give 4 tokens of 16 - too short a sequence for attention to have anything to combine (FPT's 28x28 MNIST
//    at patch 4 has 49 tokens); patch 2 keeps a sequence (16) near FPT's and each token a 2x2 stroke piece.
//    Patch 1 (64 tokens of 1) and 8 (1 token of 64) are accepted too.
// What it is not: the 70000-image MNIST (not packaged by Debian), and not the 5620-image full UCI set.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tasks/dataset.h"

namespace dl::tasks {

inline const char* digits_default_path = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
inline constexpr uint64_t kDigitsSplitSeed = 1797;
inline constexpr int32_t kDigitsSide = 8, kDigitsMaxPixel = 16;

// Images in file order: pixels n x 64 (0..16), labels n (0..9).
struct DigitImages {
  std::vector<uint8_t> pixels;
  std::vector<int32_t> labels;
  size_t size() const { return labels.size(); }
};

// Parses the CSV text; `source` names it in errors ("<source>:<line>: ..."). At least one image.
DigitImages parse_digits_csv(std::string_view text, const std::string& source);
// Reads a .csv.gz (or plain .csv) file; a missing file says which package ships the default one.
DigitImages read_digits(const std::string& path);

// The fixed split described above: image indices (into the file order) of each split, each ascending.
struct DigitsSplit {
  std::vector<int32_t> train, val, test;
};
DigitsSplit digits_split(const std::vector<int32_t>& labels);

struct DigitsConfig {
  std::string path;     // empty: digits_default_path
  int32_t patch = 2;    // 1, 2, 4 or 8
  int64_t max_train = 0, max_val = 0, max_test = 0;  // 0: the whole split; otherwise its first n (quick runs)
};

TaskData make_digits(const DigitsConfig& config);

}  // namespace dl::tasks
