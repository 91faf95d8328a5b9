// tasks/image.cpp - IDX (gz) and CIFAR-10 binary readers, grayscale as LRA, and the image views (see image.h).
#include "tasks/image.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <numeric>
#include <random>

#include <zlib.h>

namespace dl::tasks {

namespace {

uint32_t read_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// Uniform in [0, n) by rejection (same on every standard library), for the seeded validation carve.
uint64_t rand_below(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t x;
  // clang-format off
  do x = rng(); while (x >= limit);
  // clang-format on
  return x % n;
}

ImageSet subset(const ImageSet& s, const std::vector<size_t>& indices) {
  ImageSet out;
  out.rows = s.rows, out.cols = s.cols, out.channels = s.channels;
  const size_t per = static_cast<size_t>(s.rows) * s.cols * s.channels;
  out.pixels.reserve(indices.size() * per);
  for (size_t i : indices) {
    out.pixels.insert(out.pixels.end(), s.pixels.begin() + i * per, s.pixels.begin() + (i + 1) * per);
    out.labels.push_back(s.labels[i]);
  }
  return out;
}

}  // namespace

IdxArray parse_idx(const uint8_t* bytes, size_t size, const std::string& source_name) {
  if (size < 4)
    throw DataError(source_name + ": byte 0: file has " + std::to_string(size) + " bytes, an IDX header needs at least 4");
  if (bytes[0] != 0 || bytes[1] != 0)
    throw DataError(source_name + ": byte 0: bad IDX magic, expected 0x00 0x00 <type> <ndims>, found 0x" + [&] {
      char b[16];
      snprintf(b, sizeof b, "%02x 0x%02x", bytes[0], bytes[1]);
      return std::string(b);
    }());
  if (bytes[2] != 0x08)
    throw DataError(source_name + ": byte 2: IDX data type 0x" + [&] {
      char b[8];
      snprintf(b, sizeof b, "%02x", bytes[2]);
      return std::string(b);
    }() + " is not supported, expected 0x08 (unsigned byte)");
  const uint32_t ndims = bytes[3];
  if (ndims < 1 || ndims > 4)
    throw DataError(source_name + ": byte 3: IDX with " + std::to_string(ndims) + " dimensions, expected 1 to 4");
  const size_t header = 4 + 4 * size_t{ndims};
  if (size < header)
    throw DataError(source_name + ": byte " + std::to_string(size) + ": truncated IDX header, expected " +
                    std::to_string(header) + " bytes");
  IdxArray a;
  size_t count = 1;
  for (uint32_t d = 0; d < ndims; ++d) {
    const uint32_t n = read_be32(bytes + 4 + 4 * d);
    if (n == 0)
      throw DataError(source_name + ": byte " + std::to_string(4 + 4 * d) + ": dimension " + std::to_string(d) + " is 0");
    if (n > (size - header) / count)  // the shape needs more bytes than the file has (checked before it can overflow)
      throw DataError(source_name + ": byte " + std::to_string(header) +
                      ": truncated IDX file, the shape needs more bytes than the file's " + std::to_string(size));
    count *= n;
    a.dims.push_back(n);
  }
  if (size - header != count)
    throw DataError(source_name + ": byte " + std::to_string(size) + ": " +
                    (size - header < count ? "truncated IDX file" : "trailing bytes after IDX data") + ", expected " +
                    std::to_string(header + count) + " bytes for the shape, found " + std::to_string(size));
  a.data.assign(bytes + header, bytes + size);
  return a;
}

std::vector<uint8_t> read_gz_file(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw DataError(path + ": cannot open file");
  std::vector<uint8_t> out;
  std::vector<uint8_t> buf(1 << 16);
  int n;
  while ((n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()))) > 0) out.insert(out.end(), buf.begin(), buf.begin() + n);
  int err = Z_OK;
  const char* msg = gzerror(f, &err);
  const std::string message = msg ? msg : "";
  gzclose(f);
  if (n < 0 || (err != Z_OK && err != Z_STREAM_END))
    throw DataError(path + ": byte " + std::to_string(out.size()) + " of the decompressed data: gzip error: " + message +
                    " (truncated or damaged .gz file?)");
  return out;
}

IdxArray read_idx_gz(const std::string& path) {
  const auto bytes = read_gz_file(path);
  return parse_idx(bytes.data(), bytes.size(), path);
}

void write_idx_gz(const std::string& path, const IdxArray& a) {
  std::vector<uint8_t> bytes = {0, 0, 0x08, static_cast<uint8_t>(a.dims.size())};
  for (uint32_t d : a.dims)
    for (int s = 24; s >= 0; s -= 8) bytes.push_back(static_cast<uint8_t>(d >> s));
  bytes.insert(bytes.end(), a.data.begin(), a.data.end());
  gzFile f = gzopen(path.c_str(), "wb");
  if (!f) throw DataError(path + ": cannot open for writing");
  const int written = gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  if (gzclose(f) != Z_OK || written != static_cast<int>(bytes.size())) throw DataError(path + ": write failed");
}

ImageSet load_mnist_idx_split(const std::string& dir, const std::string& prefix) {
  const std::string images_path = dir + "/" + prefix + "-images-idx3-ubyte.gz";
  const std::string labels_path = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  IdxArray images = read_idx_gz(images_path);
  const IdxArray labels = read_idx_gz(labels_path);
  if (images.dims.size() != 3)
    throw DataError(images_path + ": expected 3 dimensions (count, rows, cols), found " + std::to_string(images.dims.size()));
  if (labels.dims.size() != 1)
    throw DataError(labels_path + ": expected 1 dimension (count), found " + std::to_string(labels.dims.size()));
  if (images.dims[0] != labels.dims[0])
    throw DataError(labels_path + ": " + std::to_string(labels.dims[0]) + " labels for " + std::to_string(images.dims[0]) +
                    " images in " + images_path);
  ImageSet s;
  s.rows = static_cast<int32_t>(images.dims[1]);
  s.cols = static_cast<int32_t>(images.dims[2]);
  s.pixels = std::move(images.data);
  for (size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] >= 10)
      throw DataError(labels_path + ": record " + std::to_string(i) + ": label " + std::to_string(labels.data[i]) +
                      " is not in 0..9");
    s.labels.push_back(labels.data[i]);
  }
  return s;
}

uint8_t tf_rgb_to_grayscale(uint8_t r, uint8_t g, uint8_t b) {
  // tf.image.rgb_to_grayscale on uint8, step by step in float32 as TF computes it.
  const float scale_in = 1.0f / 255.0f;
  const float gray = (r * scale_in) * 0.2989f + (g * scale_in) * 0.5870f + (b * scale_in) * 0.1140f;
  const float scaled = gray * 255.5f;  // convert_image_dtype(float -> uint8): x * (255 + 0.5), then cast
  return static_cast<uint8_t>(std::min(scaled, 255.0f));
}

ImageSet parse_cifar10_batch(const uint8_t* bytes, size_t size, const std::string& source_name) {
  constexpr size_t plane = 1024, record = 1 + 3 * plane;
  if (size == 0 || size % record != 0)
    throw DataError(source_name + ": record " + std::to_string(size / record) + ": file size " + std::to_string(size) +
                    " is not a positive multiple of the 3073-byte CIFAR-10 record (truncated file?)");
  ImageSet s;
  s.rows = s.cols = 32;
  s.channels = 1;
  const size_t n = size / record;
  s.pixels.resize(n * plane);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* rec = bytes + i * record;
    if (rec[0] >= 10)
      throw DataError(source_name + ": record " + std::to_string(i) + ": label " + std::to_string(rec[0]) + " is not in 0..9");
    s.labels.push_back(rec[0]);
    for (size_t p = 0; p < plane; ++p)
      s.pixels[i * plane + p] = tf_rgb_to_grayscale(rec[1 + p], rec[1 + plane + p], rec[1 + 2 * plane + p]);
  }
  return s;
}

ImageSet read_cifar10_batch(const std::string& path) {
  const std::string bytes = read_file(path, "CIFAR-10 batch");
  return parse_cifar10_batch(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), path);
}

// Netpbm (see the header): the header's four numbers between whitespace and comments, then the pixels.
ImageSet parse_netpbm(const uint8_t* bytes, size_t size, const std::string& source_name) {
  const std::string b((const char*)bytes, size);
  size_t at = 0;
  auto bad = [&](const std::string& why) { return DataError(source_name + ": " + why); };
  auto number = [&](const char* what) {
    for (;;) {  // whitespace and comments ('#' to the end of the line) before it
      while (at < b.size() && std::isspace((unsigned char)b[at])) at++;
      if (at < b.size() && b[at] == '#') at = std::min(b.find('\n', at), b.size());
      else break;
    }
    size_t n = 0;
    int64_t v = 0;
    while (at < b.size() && std::isdigit((unsigned char)b[at]) && n < 9) v = 10 * v + (b[at++] - '0'), n++;
    if (n == 0) throw bad(std::string("expected ") + what + " at byte " + std::to_string(at));
    return v;
  };
  const std::string magic = b.substr(0, 2);
  if (magic != "P5" && magic != "P2" && magic != "P6")
    throw bad("not a PGM or PPM image (found '" + magic + "', expected P5, P2 or P6)");
  at = 2;
  ImageSet img;
  img.cols = (int32_t)number("the width"), img.rows = (int32_t)number("the height");
  const int64_t maxval = number("the maximum value"), ch = magic == "P6" ? 3 : 1;
  if (img.cols < 1 || img.rows < 1 || img.cols > 2048 || img.rows > 2048 || maxval < 1 || maxval > 65535)
    throw bad("a " + std::to_string(img.cols) + "x" + std::to_string(img.rows) + " image of maximum value " +
              std::to_string(maxval) + " (expected 1-2048 pixels a side, a maximum of 1-65535)");
  const int64_t n = (int64_t)img.rows * img.cols * ch, wide = magic != "P2" && maxval > 255 ? 2 : 1;
  std::vector<int64_t> v((size_t)n);
  if (magic == "P2") {
    for (auto& x : v) x = number("a pixel value");
  } else {
    at++;  // the one whitespace byte after the maximum
    if ((int64_t)(b.size() - std::min(at, b.size())) < n * wide)
      throw bad(std::to_string(b.size() - std::min(at, b.size())) + " bytes of pixels, expected " + std::to_string(n * wide));
    for (int64_t i = 0; i < n; i++)
      v[i] = wide == 1 ? (unsigned char)b[at + i] : 256 * (unsigned char)b[at + 2 * i] + (unsigned char)b[at + 2 * i + 1];
  }
  auto byte = [&](int64_t x) {
    if (x > maxval) throw bad("a pixel value " + std::to_string(x) + " above the maximum " + std::to_string(maxval));
    return (uint8_t)((x * 255 + maxval / 2) / maxval);
  };
  img.labels = {0};
  for (int64_t i = 0; i < n; i += ch)
    img.pixels.push_back(ch == 1 ? byte(v[i]) : tf_rgb_to_grayscale(byte(v[i]), byte(v[i + 1]), byte(v[i + 2])));
  return img;
}

ImageSet average_pool(const ImageSet& s, int32_t k, const std::string& name) {
  if (k < 1 || s.rows % k != 0 || s.cols % k != 0)
    throw DataError(name + ": pool size " + std::to_string(k) + " does not divide the " + std::to_string(s.rows) + "x" +
                    std::to_string(s.cols) + " image");
  const int32_t c = s.channels, h = s.rows / k, w = s.cols / k, area = k * k;
  const size_t per_in = static_cast<size_t>(s.rows) * s.cols * c, per_out = static_cast<size_t>(h) * w * c;
  ImageSet out;
  out.rows = h, out.cols = w, out.channels = c, out.labels = s.labels;
  out.pixels.resize(s.size() * per_out);
  for (size_t i = 0; i < s.size(); ++i) {
    const uint8_t* px = s.pixels.data() + i * per_in;
    uint8_t* po = out.pixels.data() + i * per_out;
    for (int32_t y = 0; y < h; ++y)
      for (int32_t x = 0; x < w; ++x)
        for (int32_t ch = 0; ch < c; ++ch) {
          int32_t sum = 0;  // the k x k block whose top-left pixel is (k y, k x)
          for (int32_t dy = 0; dy < k; ++dy)
            for (int32_t dx = 0; dx < k; ++dx) sum += px[((k * y + dy) * s.cols + (k * x + dx)) * c + ch];
          po[(y * w + x) * c + ch] = static_cast<uint8_t>((sum + area / 2) / area);  // mean, halves rounded up
        }
  }
  return out;
}

const std::vector<std::string>& fashion_mnist_class_names() {
  static const std::vector<std::string> names = {"t-shirt/top", "trouser", "pullover", "dress", "coat",
                                                 "sandal",      "shirt",   "sneaker",  "bag",   "ankle boot"};
  return names;
}

const std::vector<std::string>& cifar10_class_names() {
  static const std::vector<std::string> names = {"airplane", "automobile", "bird",  "cat",  "deer",
                                                 "dog",      "frog",       "horse", "ship", "truck"};
  return names;
}

Dataset image_dataset(const std::string& name, const ImageSet& images, const ImageTaskConfig& config,
                      const std::vector<std::string>& class_names) {
  Dataset d;
  d.name = name;
  d.num_classes = static_cast<int32_t>(class_names.size());
  d.class_names = class_names;
  const int32_t c = images.channels, h = images.rows, w = images.cols, p = config.patch;
  const size_t per = static_cast<size_t>(h) * w * c;
  if (config.view == ImageView::patches && (p < 1 || h % p != 0 || w % p != 0))
    throw DataError(name + ": patch size " + std::to_string(p) + " does not divide the " + std::to_string(h) + "x" +
                    std::to_string(w) + " image");
  switch (config.view) {
    case ImageView::pixel_tokens: d.vocab_size = 256, d.max_len = static_cast<int32_t>(per); break;
    case ImageView::float_pixels: d.feature_dim = c, d.max_len = h * w; break;
    case ImageView::patches: d.feature_dim = p * p * c, d.max_len = (h / p) * (w / p); break;
  }
  d.examples.resize(images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    const uint8_t* px = images.pixels.data() + i * per;
    Example& e = d.examples[i];
    e.label = images.labels[i];
    if (config.view == ImageView::pixel_tokens) {
      e.tokens.assign(px, px + per);
    } else if (config.view == ImageView::float_pixels) {
      e.features.resize(per);
      for (size_t k = 0; k < per; ++k) e.features[k] = px[k] / 255.0f;
    } else {
      // (H/p * W/p) patches x (p * p * C) values: patch (pr, pc) row-major, then pixels row-major, channels last.
      e.features.reserve(per);
      for (int32_t pr = 0; pr < h / p; ++pr)
        for (int32_t pc = 0; pc < w / p; ++pc)
          for (int32_t y = 0; y < p; ++y)
            for (int32_t x = 0; x < p; ++x)
              for (int32_t ch = 0; ch < c; ++ch) e.features.push_back(px[((pr * p + y) * w + (pc * p + x)) * c + ch] / 255.0f);
    }
  }
  return d;
}

TaskData image_task(const std::string& name, const ImageSet& train, const ImageSet& test, const ImageTaskConfig& config,
                    const std::vector<std::string>& class_names) {
  if (config.val_size < 0 || static_cast<size_t>(config.val_size) >= train.size())
    throw DataError(name + ": val_size " + std::to_string(config.val_size) + " must be in [0, " + std::to_string(train.size()) +
                    ") (the train set has " + std::to_string(train.size()) + " images)");
  std::vector<size_t> order(train.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::mt19937_64 rng(config.seed);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rand_below(rng, i)]);
  std::vector<size_t> val_idx(order.begin(), order.begin() + config.val_size);
  std::vector<size_t> train_idx(order.begin() + config.val_size, order.end());
  std::sort(val_idx.begin(), val_idx.end());  // keep the file order inside each split
  std::sort(train_idx.begin(), train_idx.end());
  if (config.max_train > 0 && train_idx.size() > static_cast<size_t>(config.max_train)) train_idx.resize(config.max_train);
  std::vector<size_t> test_idx(test.size());
  std::iota(test_idx.begin(), test_idx.end(), size_t{0});
  if (config.max_test > 0 && test_idx.size() > static_cast<size_t>(config.max_test)) test_idx.resize(config.max_test);
  auto view = [&](const std::string& split, const ImageSet& s, const std::vector<size_t>& idx) {
    const std::string n = name + "/" + split;
    return image_dataset(n, config.pool > 1 ? average_pool(subset(s, idx), config.pool, n) : subset(s, idx), config, class_names);
  };
  TaskData t;
  t.train = view("train", train, train_idx);
  t.val = view("val", train, val_idx);
  t.test = view("test", test, test_idx);
  return t;
}

TaskData make_fashion_mnist(const ImageTaskConfig& config) {
  const std::string dir = config.dir.empty() ? fashion_mnist_default_dir : config.dir;
  return image_task("fashion_mnist", load_mnist_idx_split(dir, "train"), load_mnist_idx_split(dir, "t10k"), config,
                    fashion_mnist_class_names());
}

TaskData load_cifar10(const ImageTaskConfig& config) {
  if (config.dir.empty()) throw DataError("load_cifar10: set the folder of data_batch_{1..5}.bin and test_batch.bin");
  ImageSet train;
  for (int k = 1; k <= 5; ++k) {
    ImageSet b = read_cifar10_batch(config.dir + "/data_batch_" + std::to_string(k) + ".bin");
    train.rows = b.rows, train.cols = b.cols, train.channels = b.channels;
    train.pixels.insert(train.pixels.end(), b.pixels.begin(), b.pixels.end());
    train.labels.insert(train.labels.end(), b.labels.begin(), b.labels.end());
  }
  return image_task("cifar10", train, read_cifar10_batch(config.dir + "/test_batch.bin"), config, cifar10_class_names());
}

}  // namespace dl::tasks
