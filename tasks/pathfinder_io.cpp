// tasks/pathfinder_io.cpp - the official Pathfinder file layout, PNG I/O and the documentation grid.
//
// What it is: the metadata parser (a pure function over a string buffer, so it can be fuzzed), the
// reader and writer of <root>/<level>/{imgs/<b>/sample_<i>.png, metadata/<b>.npy} and 8-bit grayscale
// PNG helpers built on libpng's simplified API (png_image), which reports errors through return codes
// instead of longjmp, so no C++ object is ever skipped over. What it is not: the generator (pathfinder.cpp).
#include <png.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>

#include "tasks/pathfinder.h"

namespace dl::tasks {
namespace fs = std::filesystem;
namespace {

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s.substr(0, 40)) out += (c >= 32 && c < 127) ? c : '?';
  return out + (s.size() > 40 ? "...\"" : "\"");
}

std::string describe_png_format(png_uint_32 format) {
  std::string s = (format & PNG_FORMAT_FLAG_COLORMAP) ? "palette " : "";
  s += (format & PNG_FORMAT_FLAG_COLOR) ? "RGB" : "grayscale";
  if (format & PNG_FORMAT_FLAG_ALPHA) s += "+alpha";
  s += (format & PNG_FORMAT_FLAG_LINEAR) ? " 16-bit" : " 8-bit";
  return s;
}

}  // namespace

std::vector<PathfinderMetaRecord> parse_pathfinder_metadata(std::string_view text, const std::string& file_name) {
  std::vector<PathfinderMetaRecord> records;
  std::vector<int64_t> blank_lines;  // blank lines are fine only if nothing follows them
  Lines lines(text);
  for (std::string_view line; lines.next(line);) {
    const int64_t line_no = lines.number();
    const std::string where = lines.where(file_name) + ": ";
    const std::vector<std::string_view> f = split_fields(line);
    if (f.empty()) {
      blank_lines.push_back(line_no);
      continue;
    }
    if (!blank_lines.empty())
      throw DataError(file_name + ":" + std::to_string(blank_lines.front()) + ": blank line inside the metadata");
    if (f.size() < 4)
      throw DataError(where +
                      "expected at least 4 space-separated fields (image dir, file name, index, label), "
                      "found " +
                      std::to_string(f.size()) + " in " + quoted(line));
    PathfinderMetaRecord r;
    r.image_dir = std::string(f[0]);
    r.file_name = std::string(f[1]);
    // The record names a file below the level directory: refuse anything that could leave it.
    for (std::string_view part : {f[0], f[1]})
      if (part.front() == '/' || part.find("..") != std::string_view::npos || part.find('\\') != std::string_view::npos)
        throw DataError(where + "image path must be relative and stay below the level directory, found " + quoted(part));
    if (f[1].size() < 5 || f[1].substr(f[1].size() - 4) != ".png")
      throw DataError(where + "expected a .png file name in column 2, found " + quoted(f[1]));
    const auto [p2, e2] = std::from_chars(f[2].data(), f[2].data() + f[2].size(), r.index);
    if (e2 != std::errc() || p2 != f[2].data() + f[2].size() || r.index < 0)
      throw DataError(where + "expected a non-negative integer sample index in column 3, found " + quoted(f[2]));
    if (f[3] != "0" && f[3] != "1") throw DataError(where + "expected label 0 or 1 in column 4, found " + quoted(f[3]));
    r.label = f[3] == "1" ? 1 : 0;
    records.push_back(std::move(r));
  }
  return records;
}

// ---- PNG -----------------------------------------------------------------------------------

void write_gray_png(const std::string& path, const std::vector<uint8_t>& pixels, int32_t width, int32_t height) {
  if (width <= 0 || height <= 0 || pixels.size() != size_t(width) * height)
    throw DataError(path + ": cannot write a " + std::to_string(width) + "x" + std::to_string(height) + " PNG from " +
                    std::to_string(pixels.size()) + " pixels");
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = png_uint_32(width);
  image.height = png_uint_32(height);
  image.format = PNG_FORMAT_GRAY;
  if (!png_image_write_to_file(&image, path.c_str(), 0, pixels.data(), width, nullptr))
    throw DataError(path + ": writing PNG failed (" + image.message + ")");
}

std::vector<uint8_t> read_gray_png(const std::string& path, int32_t expected_width, int32_t expected_height) {
  if (!fs::exists(path)) throw DataError(path + ": PNG file is missing");
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path.c_str()))
    throw DataError(path + ": not a readable PNG (" + image.message + ")");
  const png_uint_32 found_format = image.format;
  auto fail = [&](const std::string& msg) {
    png_image_free(&image);
    throw DataError(path + ": " + msg);
  };
  if ((expected_width > 0 && image.width != png_uint_32(expected_width)) ||
      (expected_height > 0 && image.height != png_uint_32(expected_height)))
    fail("expected a " + std::to_string(expected_width) + "x" + std::to_string(expected_height) + " image, found " +
         std::to_string(image.width) + "x" + std::to_string(image.height));
  if (found_format != PNG_FORMAT_GRAY) fail("expected an 8-bit grayscale PNG, found " + describe_png_format(found_format));
  std::vector<uint8_t> pixels(size_t(image.width) * image.height);
  if (!png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr))
    throw DataError(path + ": corrupt PNG data (" + image.message + ")");  // finish_read frees on failure
  return pixels;
}

// ---- official layout ------------------------------------------------------------------------

void write_pathfinder_official(const std::string& root, const PathfinderConfig& config, int64_t num_examples, uint64_t seed,
                               int64_t images_per_batch) {
  if (images_per_batch <= 0) throw DataError("write_pathfinder_official: images_per_batch must be > 0");
  const Dataset data = make_pathfinder(config, num_examples, seed);
  const fs::path level = fs::path(root) / pathfinder_level_name(config.contour_length);
  fs::create_directories(level / "metadata");
  for (int64_t b = 0; b * images_per_batch < num_examples; ++b) {
    const std::string dir = "imgs/" + std::to_string(b);
    fs::create_directories(level / dir);
    std::ofstream meta(level / "metadata" / (std::to_string(b) + ".npy"), std::ios::binary);
    for (int64_t i = 0; i < images_per_batch && b * images_per_batch + i < num_examples; ++i) {
      const Example& e = data.examples[size_t(b * images_per_batch + i)];
      const std::string file = "sample_" + std::to_string(i) + ".png";
      write_gray_png((level / dir / file).string(), std::vector<uint8_t>(e.tokens.begin(), e.tokens.end()), config.side,
                     config.side);
      meta << dir << ' ' << file << ' ' << i << ' ' << e.label << ' ' << config.contour_length << '\n';
    }
    if (!meta) throw DataError((level / "metadata").string() + ": writing metadata failed");
  }
}

Dataset read_pathfinder_official(const std::string& root, const std::string& level, const PathfinderReadOptions& options) {
  const fs::path level_dir = fs::path(root) / level;
  const fs::path meta_dir = level_dir / "metadata";
  if (!fs::is_directory(meta_dir)) throw DataError(meta_dir.string() + ": metadata directory is missing");
  std::vector<fs::path> files;
  if (options.batches.empty()) {
    std::vector<std::pair<int64_t, fs::path>> numbered;
    for (const auto& entry : fs::directory_iterator(meta_dir)) {
      if (entry.path().extension() != ".npy") continue;
      const std::string stem = entry.path().stem().string();
      int64_t b = -1;
      std::from_chars(stem.data(), stem.data() + stem.size(), b);
      numbered.emplace_back(b, entry.path());
    }
    std::sort(numbered.begin(), numbered.end());  // numeric order: 2.npy before 10.npy
    for (auto& [b, p] : numbered) files.push_back(p);
    if (files.empty()) throw DataError(meta_dir.string() + ": no <batch>.npy metadata files");
  } else {
    for (int64_t b : options.batches) files.push_back(meta_dir / (std::to_string(b) + ".npy"));
  }

  Dataset d;
  d.name = "pathfinder" + std::to_string(options.side) + "/" + level;
  d.vocab_size = 256;
  d.num_classes = 2;
  d.max_len = options.side * options.side;
  d.class_names = {"disconnected", "connected"};
  for (const fs::path& file : files) {
    for (const PathfinderMetaRecord& r : parse_pathfinder_metadata(read_file(file.string(), "metadata file"), file.string())) {
      if (options.max_examples >= 0 && int64_t(d.examples.size()) >= options.max_examples) return d;
      const std::vector<uint8_t> pixels =
          read_gray_png((level_dir / r.image_dir / r.file_name).string(), options.side, options.side);
      Example e;
      e.tokens.assign(pixels.begin(), pixels.end());
      e.label = r.label;
      d.examples.push_back(std::move(e));
    }
  }
  return d;
}

void write_pathfinder_grid(const std::string& path, const Dataset& data, int32_t side, int32_t count, int32_t columns) {
  count = std::min<int32_t>(count, int32_t(data.examples.size()));
  if (count <= 0 || columns <= 0) throw DataError("write_pathfinder_grid(" + path + "): nothing to draw");
  const int32_t rows = (count + columns - 1) / columns, cell = side + 4;  // 1 frame + 1 spacing each side
  const int32_t W = columns * cell, H = rows * cell;
  std::vector<uint8_t> grid(size_t(W) * H, 0);
  for (int32_t n = 0; n < count; ++n) {
    const Example& e = data.examples[size_t(n)];
    if (e.tokens.size() != size_t(side) * side)
      throw DataError("write_pathfinder_grid: example " + std::to_string(n) + " has " + std::to_string(e.tokens.size()) +
                      " pixels, expected " + std::to_string(side * side));
    const int32_t ox = (n % columns) * cell + 2, oy = (n / columns) * cell + 2;
    const uint8_t frame = e.label == 1 ? 170 : 70;
    for (int32_t i = -1; i <= side; ++i) {
      grid[size_t(oy - 1) * W + ox + i] = grid[size_t(oy + side) * W + ox + i] = frame;
      grid[size_t(oy + i) * W + ox - 1] = grid[size_t(oy + i) * W + ox + side] = frame;
    }
    for (int32_t y = 0; y < side; ++y)
      for (int32_t x = 0; x < side; ++x) grid[size_t(oy + y) * W + ox + x] = uint8_t(e.tokens[size_t(y) * side + x]);
  }
  write_gray_png(path, grid, W, H);
}

}  // namespace dl::tasks
