// tests/tasks_lra/test_image.cpp - IDX (gz) and CIFAR-10 readers, grayscale, views, Fashion-MNIST.
#include <gtest/gtest.h>
#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "tasks/image.h"
#include "tasks/registry.h"
#include "test_util.h"

namespace dl::tasks {
namespace {

using testing::data_error_message;
using testing::TempDir;
using testing::write_file;

// n images of rows x cols where pixel (i, y, x) = (i * 7 + y * cols + x) % 256, labels i % 10.
void write_mnist_like(const TempDir& dir, const std::string& prefix, uint32_t n, uint32_t rows, uint32_t cols) {
  IdxArray images{{n, rows, cols}, {}}, labels{{n}, {}};
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t p = 0; p < rows * cols; ++p) images.data.push_back(static_cast<uint8_t>((i * 7 + p) % 256));
    labels.data.push_back(static_cast<uint8_t>(i % 10));
  }
  write_idx_gz(dir.file(prefix + "-images-idx3-ubyte.gz"), images);
  write_idx_gz(dir.file(prefix + "-labels-idx1-ubyte.gz"), labels);
}

TEST(Idx, RoundTripThroughGzip) {
  TempDir dir("idx");
  const IdxArray a{{2, 3, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}};
  write_idx_gz(dir.file("a.gz"), a);
  const IdxArray b = read_idx_gz(dir.file("a.gz"));
  EXPECT_EQ(b.dims, a.dims);
  EXPECT_EQ(b.data, a.data);
}

TEST(Idx, BadMagicTypeAndTruncationAreDataErrors) {
  const std::vector<uint8_t> good = {0, 0, 8, 1, 0, 0, 0, 3, 7, 8, 9};
  EXPECT_EQ(parse_idx(good.data(), good.size(), "g").data, (std::vector<uint8_t>{7, 8, 9}));
  auto bad = good;
  bad[0] = 0x1f;
  std::string msg = data_error_message([&] { parse_idx(bad.data(), bad.size(), "labels.idx"); });
  EXPECT_NE(msg.find("labels.idx: byte 0: bad IDX magic"), std::string::npos) << msg;
  bad = good;
  bad[2] = 0x0d;  // float data
  msg = data_error_message([&] { parse_idx(bad.data(), bad.size(), "f"); });
  EXPECT_NE(msg.find("byte 2: IDX data type 0x0d"), std::string::npos) << msg;
  msg = data_error_message([&] { parse_idx(good.data(), good.size() - 1, "short.idx"); });
  EXPECT_NE(msg.find("short.idx"), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  msg = data_error_message([&] { parse_idx(good.data(), 6, "hdr"); });
  EXPECT_NE(msg.find("truncated IDX header"), std::string::npos) << msg;
  const std::vector<uint8_t> huge = {0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1};
  msg = data_error_message([&] { parse_idx(huge.data(), huge.size(), "huge"); });
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

TEST(Idx, TruncatedGzipFileIsADataErrorNamingTheFile) {
  TempDir dir("idx_trunc");
  IdxArray a{{100, 28, 28}, std::vector<uint8_t>(100 * 28 * 28)};
  for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = static_cast<uint8_t>(i * 31 % 251);
  write_idx_gz(dir.file("full.gz"), a);
  std::ifstream in(dir.file("full.gz"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write_file(dir.file("cut.gz"), bytes.substr(0, bytes.size() / 2));
  const std::string msg = data_error_message([&] { read_idx_gz(dir.file("cut.gz")); });
  EXPECT_NE(msg.find(dir.file("cut.gz")), std::string::npos) << msg;
}

TEST(FashionMnistFormat, ViewsAndValidationCarve) {
  TempDir dir("fmnist");
  write_mnist_like(dir, "train", 20, 28, 28);
  write_mnist_like(dir, "t10k", 5, 28, 28);
  ImageTaskConfig cfg;
  cfg.dir = dir.str();
  cfg.val_size = 4;
  TaskData t = make_fashion_mnist(cfg);
  EXPECT_EQ(t.train.examples.size(), 16u);
  EXPECT_EQ(t.val.examples.size(), 4u);
  EXPECT_EQ(t.test.examples.size(), 5u);
  EXPECT_EQ(t.train.vocab_size, 256);
  EXPECT_EQ(t.train.max_len, 784);
  ASSERT_EQ(t.test.examples[3].tokens.size(), 784u);
  EXPECT_EQ(t.test.examples[3].tokens[100], (3 * 7 + 100) % 256);
  EXPECT_EQ(t.test.examples[3].label, 3);
  std::set<int32_t> labels;  // every train image is in exactly one of train/val
  for (const auto* d : {&t.train, &t.val})
    for (const auto& e : d->examples) labels.insert(e.tokens[0]);
  EXPECT_EQ(labels.size(), 20u);

  cfg.view = ImageView::patches;
  t = make_fashion_mnist(cfg);
  EXPECT_EQ(t.test.feature_dim, 16);
  EXPECT_EQ(t.test.max_len, 49);
  const auto& f = t.test.examples[1].features;
  ASSERT_EQ(f.size(), 49u * 16u);
  // patch 8 = patch row 1, patch col 1; its value 5 = pixel row 1, col 1 inside -> image (5, 5)
  EXPECT_FLOAT_EQ(f[8 * 16 + 5], ((1 * 7 + 5 * 28 + 5) % 256) / 255.0f);

  cfg.view = ImageView::float_pixels;
  t = make_fashion_mnist(cfg);
  EXPECT_EQ(t.test.feature_dim, 1);
  EXPECT_FLOAT_EQ(t.test.examples[1].features[30], ((1 * 7 + 30) % 256) / 255.0f);
}

// 2x2 average pooling: a hand-pooled 2x4 image, then the `image14` task (the registry's 14x14 view) against the
// formula on the generated images, and two blocks by hand (means 95.5 and 77.5, so the rounding shows).
TEST(FashionMnistFormat, Image14IsTheHandPooledImage) {
  ImageSet one;
  one.rows = 2, one.cols = 4;
  one.pixels = {0, 1, 10, 11, 2, 4, 20, 23};
  one.labels = {6};
  const ImageSet pooled = average_pool(one, 2, "one");
  EXPECT_EQ(pooled.rows, 1);
  EXPECT_EQ(pooled.cols, 2);
  EXPECT_EQ(pooled.pixels, (std::vector<uint8_t>{2, 16}));  // 7 / 4 = 1.75 -> 2, 64 / 4 = 16
  EXPECT_EQ(pooled.labels, one.labels);

  TempDir dir("fmnist14");
  write_mnist_like(dir, "train", 20, 28, 28);
  write_mnist_like(dir, "t10k", 5, 28, 28);
  TaskConfig c;
  c.data_path = dir.str();
  c.val_size = 4;
  const TaskData t = make_task("image14", c);
  EXPECT_EQ(t.train.examples.size(), 16u);
  EXPECT_EQ(t.val.examples.size(), 4u);
  EXPECT_EQ(t.train.vocab_size, 256);
  EXPECT_EQ(t.train.max_len, 196);
  const Example& e = t.test.examples[3];
  ASSERT_EQ(e.tokens.size(), 196u);
  EXPECT_EQ(e.label, 3);
  auto px = [](int i, int y, int x) { return (i * 7 + y * 28 + x) % 256; };
  for (int y = 0; y < 14; ++y)
    for (int x = 0; x < 14; ++x) {
      const int sum = px(3, 2 * y, 2 * x) + px(3, 2 * y, 2 * x + 1) + px(3, 2 * y + 1, 2 * x) + px(3, 2 * y + 1, 2 * x + 1);
      ASSERT_EQ(e.tokens[y * 14 + x], (sum + 2) / 4) << "pixel (" << y << ", " << x << ")";
    }
  EXPECT_EQ(e.tokens[1 * 14 + 2], 96);  // 81 + 82 + 109 + 110 = 382: 95.5 rounds up
  EXPECT_EQ(e.tokens[4 * 14 + 5], 78);  // 255 + 0 + 27 + 28 = 310 (the row wraps mod 256): 77.5 rounds up

  ImageTaskConfig bad;
  bad.dir = dir.str();
  bad.val_size = 4;
  bad.pool = 3;
  const std::string msg = data_error_message([&] { make_fashion_mnist(bad); });
  EXPECT_NE(msg.find("pool size 3 does not divide the 28x28 image"), std::string::npos) << msg;
}

TEST(FashionMnistFormat, MismatchedCountsAndBadLabelsNameTheFile) {
  TempDir dir("fmnist_bad");
  write_mnist_like(dir, "train", 20, 28, 28);
  write_idx_gz(dir.file("train-labels-idx1-ubyte.gz"), IdxArray{{19}, std::vector<uint8_t>(19, 1)});
  std::string msg = data_error_message([&] { load_mnist_idx_split(dir.str(), "train"); });
  EXPECT_NE(msg.find("19 labels for 20 images"), std::string::npos) << msg;
  std::vector<uint8_t> labels(20, 1);
  labels[7] = 12;
  write_idx_gz(dir.file("train-labels-idx1-ubyte.gz"), IdxArray{{20}, labels});
  msg = data_error_message([&] { load_mnist_idx_split(dir.str(), "train"); });
  EXPECT_NE(msg.find("train-labels-idx1-ubyte.gz: record 7: label 12"), std::string::npos) << msg;
}

TEST(Cifar10, GrayscaleMatchesTensorflow) {
  EXPECT_EQ(tf_rgb_to_grayscale(0, 0, 0), 0);
  EXPECT_EQ(tf_rgb_to_grayscale(255, 255, 255), 255);
  EXPECT_EQ(tf_rgb_to_grayscale(255, 0, 0), 76);       // 0.2989 * 255.5 = 76.37
  EXPECT_EQ(tf_rgb_to_grayscale(0, 255, 0), 149);      // 0.5870 * 255.5 = 149.98
  EXPECT_EQ(tf_rgb_to_grayscale(0, 0, 255), 29);       // 0.1140 * 255.5 = 29.13
  EXPECT_EQ(tf_rgb_to_grayscale(100, 150, 200), 141);  // 140.74 / 255 * 255.5 = 141.02
}

std::string cifar_record(uint8_t label, uint8_t r, uint8_t g, uint8_t b) {
  std::string rec(1, static_cast<char>(label));
  rec +=
      std::string(1024, static_cast<char>(r)) + std::string(1024, static_cast<char>(g)) + std::string(1024, static_cast<char>(b));
  return rec;
}

TEST(Cifar10, LoadsBinaryBatchesAsGrayscaleSequences) {
  TempDir dir("cifar");
  for (int k = 1; k <= 5; ++k)
    write_file(dir.file("data_batch_" + std::to_string(k) + ".bin"),
               cifar_record(static_cast<uint8_t>(k), 255, 0, 0) + cifar_record(9, 0, 0, 255));
  write_file(dir.file("test_batch.bin"), cifar_record(3, 100, 150, 200));
  ImageTaskConfig cfg;
  cfg.dir = dir.str();
  cfg.val_size = 2;
  const TaskData t = load_cifar10(cfg);
  EXPECT_EQ(t.train.examples.size(), 8u);
  EXPECT_EQ(t.val.examples.size(), 2u);
  ASSERT_EQ(t.test.examples.size(), 1u);
  EXPECT_EQ(t.test.examples[0].tokens.size(), 1024u);
  EXPECT_EQ(t.test.examples[0].tokens[1023], 141);
  EXPECT_EQ(t.test.examples[0].label, 3);
  EXPECT_EQ(t.test.class_names[3], "cat");
}

TEST(Cifar10, DamagedBatchesNameFileAndRecord) {
  TempDir dir("cifar_bad");
  write_file(dir.file("b.bin"), cifar_record(1, 1, 2, 3) + cifar_record(2, 1, 2, 3).substr(0, 100));
  std::string msg = data_error_message([&] { read_cifar10_batch(dir.file("b.bin")); });
  EXPECT_NE(msg.find(dir.file("b.bin") + ": record 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3073"), std::string::npos) << msg;
  write_file(dir.file("c.bin"), cifar_record(1, 1, 2, 3) + cifar_record(10, 1, 2, 3));
  msg = data_error_message([&] { read_cifar10_batch(dir.file("c.bin")); });
  EXPECT_NE(msg.find("c.bin: record 1: label 10 is not in 0..9"), std::string::npos) << msg;
}

TEST(FashionMnistReal, DebianPackageLoadsBalanced) {
  if (!std::filesystem::exists(std::string(fashion_mnist_default_dir) + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Debian package dataset-fashion-mnist is not installed (apt-get install dataset-fashion-mnist)";
  ImageTaskConfig cfg;
  cfg.max_train = 1000;
  const auto t0 = std::chrono::steady_clock::now();
  const TaskData t = make_fashion_mnist(cfg);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(t.train.examples.size(), 1000u);
  EXPECT_EQ(t.val.examples.size(), 6000u);
  ASSERT_EQ(t.test.examples.size(), 10000u);
  std::vector<int> per_class(10);
  int32_t max_pixel = 0;
  for (const auto& e : t.test.examples) {
    ++per_class[e.label];
    for (int32_t p : e.tokens) max_pixel = std::max(max_pixel, p);
  }
  EXPECT_EQ(per_class, std::vector<int>(10, 1000));
  EXPECT_EQ(max_pixel, 255);
  RecordProperty("load_seconds", std::to_string(seconds));
}

}  // namespace
}  // namespace dl::tasks
