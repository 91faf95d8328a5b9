// tasks/image.h - the LRA "Image" task: images flattened into pixel sequences (Fashion-MNIST, CIFAR-10).
//
// What it is.
//  - An IDX reader (LeCun's MNIST format, used by Fashion-MNIST): big-endian magic 0x00 0x00 <type> <ndims>,
//    ndims big-endian uint32 sizes, then the data. Only type 0x08 (unsigned byte) is used by these files.
//    The reader takes a byte buffer (parse_idx, fuzzable) or a .gz file read with zlib (read_idx_gz); wrong
//    magic, impossible sizes and truncated files are DataErrors naming the file and the byte offset.
//  - Fashion-MNIST (Xiao et al. 2017) from Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist,
//    60000 train + 10000 test, 28x28, 10 balanced classes) in three views:
//      pixel_tokens : 784 tokens, id = pixel value 0..255, vocabulary 256 (LRA Image: no specials, the
//                     sequence always has full length so pad is never used; pad_id is 0 by convention);
//      float_pixels : 784 x 1 floats, pixel / 255 (LRA's `normalize=True`);
//      patches      : 7 x 7 = 49 patches of 4x4 = 16 floats (pixel / 255), row-major patches and row-major
//                     pixels inside a patch, as in the FPT paper's image tasks (Lu et al. 2021).
//    Validation is carved from train: a seeded random `val_size` images (LRA took the last 10% of train
//    for MNIST/CIFAR; we draw them at random so the classes stay balanced).
//    `pool` = k > 1 first shrinks every image by k x k average pooling (out(y, x) = round(mean of the k x k block
//    at (k y, k x)), halves rounded up), so a 28x28 image becomes 14x14 = 196 tokens at k = 2: a pixel-level task
//    short enough for a tiny Transformer on a CPU (the `image14` task; LRA's own Image task is 32x32 = 1024).
//  - CIFAR-10 binary batches (`data_batch_{1..5}.bin`, `test_batch.bin`: records of 1 label byte + 1024 R +
//    1024 G + 1024 B bytes), converted to grayscale exactly as LRA's tf.image.rgb_to_grayscale on uint8:
//    to float (v / 255), gray = 0.2989 R + 0.5870 G + 0.1140 B, back to uint8 by truncating gray * 255.5
//    (tf.image.convert_image_dtype scales by max + 0.5 and casts). 1024-long sequences.
//
// What it is not: an augmentation library and not a PNG reader (Pathfinder has its own loader).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tasks/dataset.h"

namespace dl::tasks {

struct IdxArray {
  std::vector<uint32_t> dims;  // e.g. {60000, 28, 28}
  std::vector<uint8_t> data;   // product(dims) bytes
};

// `source_name` only appears in messages. Throws DataError on a bad magic, a non-ubyte type, an empty or
// overflowing shape, or fewer (or more) bytes than the shape needs.
IdxArray parse_idx(const uint8_t* bytes, size_t size, const std::string& source_name);
std::vector<uint8_t> read_gz_file(const std::string& path);  // whole decompressed file (zlib gzopen/gzread)
IdxArray read_idx_gz(const std::string& path);
void write_idx_gz(const std::string& path, const IdxArray& array);  // for tests and tools

// Images of one split: n x rows x cols x channels bytes, channels last, plus one label per image.
struct ImageSet {
  int32_t rows = 0, cols = 0, channels = 1;
  std::vector<uint8_t> pixels;
  std::vector<int32_t> labels;
  size_t size() const { return labels.size(); }
};

// <dir>/<prefix>-images-idx3-ubyte.gz and <prefix>-labels-idx1-ubyte.gz (prefix "train" or "t10k"); the
// counts of the two files must agree and labels must be < 10.
ImageSet load_mnist_idx_split(const std::string& dir, const std::string& prefix);

// One CIFAR-10 batch file held in memory, converted to grayscale (channels = 1).
ImageSet parse_cifar10_batch(const uint8_t* bytes, size_t size, const std::string& source_name);
ImageSet read_cifar10_batch(const std::string& path);
// One Netpbm image held in memory as 8-bit gray (channels 1, one label 0): P5 or P2 (gray) or P6 (RGB, made gray by
// tf_rgb_to_grayscale, as CIFAR-10); a maximum value other than 255 is scaled to 255 (rounded); at most 2048 pixels a
// side. A bad magic, header number or pixel value, or fewer pixel bytes than the header asks, is a DataError naming
// source_name and what was found (`lra_benchmark predict --image` reads pictures with it).
ImageSet parse_netpbm(const uint8_t* bytes, size_t size, const std::string& source_name);
// k x k average pooling of every image and channel (k must divide rows and cols): mean rounded to nearest.
ImageSet average_pool(const ImageSet& images, int32_t k, const std::string& name);
uint8_t tf_rgb_to_grayscale(uint8_t r, uint8_t g, uint8_t b);

enum class ImageView { pixel_tokens, float_pixels, patches };

struct ImageTaskConfig {
  std::string dir;  // empty: /usr/share/datasets/fashion-mnist (Fashion-MNIST) - required for CIFAR
  ImageView view = ImageView::pixel_tokens;
  int32_t patch = 4;        // patch side for ImageView::patches (must divide rows and cols)
  int32_t pool = 1;         // k x k average pooling before the view (1 = none; must divide rows and cols)
  int64_t val_size = 6000;  // carved from train (10%, as LRA)
  int64_t max_train = 0;    // 0 = all; otherwise the first max_train after the val carve (quick runs)
  int64_t max_test = 0;     // 0 = all
  uint64_t seed = 0;
};

inline const char* fashion_mnist_default_dir = "/usr/share/datasets/fashion-mnist";
const std::vector<std::string>& fashion_mnist_class_names();
const std::vector<std::string>& cifar10_class_names();

// Examples of one ImageSet in a view; `name` becomes Dataset::name.
Dataset image_dataset(const std::string& name, const ImageSet& images, const ImageTaskConfig& config,
                      const std::vector<std::string>& class_names);
// Splits a train set into train/val (seeded) and builds the three Datasets.
TaskData image_task(const std::string& name, const ImageSet& train, const ImageSet& test, const ImageTaskConfig& config,
                    const std::vector<std::string>& class_names);

TaskData make_fashion_mnist(const ImageTaskConfig& config);
TaskData load_cifar10(const ImageTaskConfig& config);  // config.dir = folder of the .bin batches; val 5000 is usual

}  // namespace dl::tasks
