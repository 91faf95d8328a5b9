// tests/tasks_gen/test_pathfinder.cpp - Pathfinder generator, official layout round trip, damaged files.
#include <gtest/gtest.h>
#include <png.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "data_error_of.h"
#include "tasks/pathfinder.h"

namespace fs = std::filesystem;
using namespace dl::tasks;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("dl_tasks_gen_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Mean pixel value in a disc, to check that a marker is drawn where the sample says it is.
double mean_in_disc(const std::vector<uint8_t>& px, int side, double cx, double cy, double r) {
  double sum = 0;
  int n = 0;
  for (int y = 0; y < side; ++y)
    for (int x = 0; x < side; ++x)
      if ((x + 0.5 - cx) * (x + 0.5 - cx) + (y + 0.5 - cy) * (y + 0.5 - cy) <= r * r) sum += px[y * side + x], ++n;
  return n ? sum / n : 0;
}

}  // namespace

TEST(Pathfinder, LevelNames) {
  EXPECT_EQ(pathfinder_level_name(6), "curv_baseline");
  EXPECT_EQ(pathfinder_level_name(9), "curv_contour_length_9");
  EXPECT_EQ(pathfinder_level_name(14), "curv_contour_length_14");
}

TEST(Pathfinder, BalancedLabelsShapesAndVocab) {
  const Dataset d = make_pathfinder(pathfinder_config(32, 14), 101, 7);
  ASSERT_EQ(d.examples.size(), 101u);
  int ones = 0;
  for (const Example& e : d.examples) {
    ASSERT_EQ(e.tokens.size(), 32u * 32u);
    for (int32_t t : e.tokens) ASSERT_TRUE(t >= 0 && t < 256);
    ones += e.label;
  }
  EXPECT_EQ(ones, 50);  // floor/ceil split of an odd count
  EXPECT_EQ(d.vocab_size, 256);
  EXPECT_EQ(d.num_classes, 2);
  EXPECT_EQ(d.max_len, 1024);
  // Labels are shuffled, not alternating.
  int alternations = 0;
  for (size_t i = 1; i < d.examples.size(); ++i) alternations += d.examples[i].label != d.examples[i - 1].label;
  EXPECT_LT(alternations, 90);
}

TEST(Pathfinder, DeterministicForASeed) {
  const auto c = pathfinder_config(64, 9);
  const Dataset a = make_pathfinder(c, 6, 123), b = make_pathfinder(c, 6, 123), other = make_pathfinder(c, 6, 124);
  for (size_t i = 0; i < a.examples.size(); ++i) {
    EXPECT_EQ(a.examples[i].tokens, b.examples[i].tokens);
    EXPECT_EQ(a.examples[i].label, b.examples[i].label);
  }
  EXPECT_NE(a.examples[0].tokens, other.examples[0].tokens);
}

TEST(Pathfinder, MarkersDrawnAtEveryScaleAndPathsPresent) {
  for (int side : {32, 64, 128, 256}) {
    const PathfinderConfig c = pathfinder_config(side, 14);
    std::mt19937_64 rng(side);
    for (int label : {0, 1}) {
      const PathfinderSample s = render_pathfinder(c, label, rng);
      ASSERT_EQ(s.pixels.size(), size_t(side) * side);
      EXPECT_EQ(s.label, label);
      for (int m = 0; m < 2; ++m)  // the marker disc is (nearly) solid white
        EXPECT_GT(mean_in_disc(s.pixels, side, s.marker_xy[m][0], s.marker_xy[m][1], c.geometry.marker_radius * 0.7), 200.0)
            << "side " << side << " marker " << m;
      const double dx = s.marker_xy[0][0] - s.marker_xy[1][0], dy = s.marker_xy[0][1] - s.marker_xy[1][1];
      EXPECT_GT(std::hypot(dx, dy), 2 * c.geometry.marker_radius) << "markers overlap at side " << side;
      // Strokes cover a small but real part of the image.
      size_t lit = 0;
      for (uint8_t p : s.pixels) lit += p > 100;
      EXPECT_GT(lit, s.pixels.size() / 100) << side;
      EXPECT_LT(lit, s.pixels.size() / 3) << side;
    }
  }
}

TEST(Pathfinder, OfficialLayoutRoundTrip) {
  const fs::path root = fresh_dir("pf_roundtrip");
  const PathfinderConfig c = pathfinder_config(32, 6);
  write_pathfinder_official(root.string(), c, 10, 5, /*images_per_batch=*/4);
  const fs::path level = root / "curv_baseline";
  EXPECT_TRUE(fs::exists(level / "imgs/0/sample_0.png"));
  EXPECT_TRUE(fs::exists(level / "imgs/2/sample_1.png"));
  EXPECT_TRUE(fs::exists(level / "metadata/2.npy"));
  std::ifstream meta(level / "metadata/0.npy");
  std::string first;
  std::getline(meta, first);
  EXPECT_EQ(first.substr(0, 23), "imgs/0 sample_0.png 0 " + std::string(1, first[22]));

  PathfinderReadOptions opt;
  opt.side = 32;
  const Dataset back = read_pathfinder_official(root.string(), "curv_baseline", opt);
  const Dataset want = make_pathfinder(c, 10, 5);
  ASSERT_EQ(back.examples.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(back.examples[i].tokens, want.examples[i].tokens) << i;
    EXPECT_EQ(back.examples[i].label, want.examples[i].label) << i;
  }
  opt.batches = {1};
  opt.max_examples = 3;
  EXPECT_EQ(read_pathfinder_official(root.string(), "curv_baseline", opt).examples.size(), 3u);
  fs::remove_all(root);
}

TEST(Pathfinder, DamagedFilesNameTheFile) {
  const fs::path root = fresh_dir("pf_damaged");
  write_pathfinder_official(root.string(), pathfinder_config(32, 6), 4, 1, 2);
  const fs::path level = root / "curv_baseline";
  PathfinderReadOptions opt;
  opt.side = 32;

  // Missing metadata file for a requested batch.
  opt.batches = {7};
  std::string msg = dl::test::data_error_of([&] { read_pathfinder_official(root.string(), "curv_baseline", opt); });
  EXPECT_NE(msg.find("metadata/7.npy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing"), std::string::npos) << msg;
  // Missing level directory.
  msg = dl::test::data_error_of([&] { read_pathfinder_official(root.string(), "curv_contour_length_9", opt); });
  EXPECT_NE(msg.find("curv_contour_length_9/metadata"), std::string::npos) << msg;

  // A bad line names file:line and what was expected.
  opt.batches = {0};
  {
    std::ofstream m(level / "metadata/0.npy");
    m << "imgs/0 sample_0.png 0 1 6\nimgs/0 sample_1.png 1 maybe 6\n";
  }
  msg = dl::test::data_error_of([&] { read_pathfinder_official(root.string(), "curv_baseline", opt); });
  EXPECT_NE(msg.find("metadata/0.npy:2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("label 0 or 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"maybe\""), std::string::npos) << msg;

  // A PNG of the wrong size names the file, expected and found sizes.
  {
    std::ofstream m(level / "metadata/0.npy");
    m << "imgs/0 sample_0.png 0 1 6\n";
  }
  write_gray_png((level / "imgs/0/sample_0.png").string(), std::vector<uint8_t>(20 * 16, 9), 20, 16);
  msg = dl::test::data_error_of([&] { read_pathfinder_official(root.string(), "curv_baseline", opt); });
  EXPECT_NE(msg.find("imgs/0/sample_0.png"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected a 32x32 image, found 20x16"), std::string::npos) << msg;

  // A colour PNG is rejected with its colour type.
  {
    png_image rgb{};
    rgb.version = PNG_IMAGE_VERSION;
    rgb.width = rgb.height = 32;
    rgb.format = PNG_FORMAT_RGB;
    const std::vector<uint8_t> px(32 * 32 * 3, 100);
    ASSERT_TRUE(png_image_write_to_file(&rgb, (level / "imgs/0/sample_0.png").c_str(), 0, px.data(), 0, nullptr));
  }
  msg = dl::test::data_error_of([&] { read_pathfinder_official(root.string(), "curv_baseline", opt); });
  EXPECT_NE(msg.find("imgs/0/sample_0.png: expected an 8-bit grayscale PNG, found RGB 8-bit"), std::string::npos) << msg;
  // A missing PNG.
  fs::remove(level / "imgs/0/sample_0.png");
  msg = dl::test::data_error_of([&] { read_pathfinder_official(root.string(), "curv_baseline", opt); });
  EXPECT_NE(msg.find("sample_0.png: PNG file is missing"), std::string::npos) << msg;
  // Not a PNG at all.
  std::ofstream(level / "imgs/0/sample_0.png") << "hello";
  msg = dl::test::data_error_of([&] { read_pathfinder_official(root.string(), "curv_baseline", opt); });
  EXPECT_NE(msg.find("sample_0.png: not a readable PNG"), std::string::npos) << msg;
  fs::remove_all(root);
}

TEST(Pathfinder, MetadataParserEdgeCases) {
  auto recs = parse_pathfinder_metadata("imgs/3 sample_9.png 9 0 14 2 1\r\nimgs/3 sample_10.png 10 1 14\n\n", "m.npy");
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].image_dir, "imgs/3");
  EXPECT_EQ(recs[1].file_name, "sample_10.png");
  EXPECT_EQ(recs[1].index, 10);
  EXPECT_EQ(recs[0].label, 0);
  EXPECT_EQ(recs[1].label, 1);
  EXPECT_TRUE(parse_pathfinder_metadata("", "m.npy").empty());
  EXPECT_NE(dl::test::data_error_of([] { parse_pathfinder_metadata("imgs/0 a.png 0\n", "m.npy"); }).find("m.npy:1: expected at least 4"),
            std::string::npos);
  EXPECT_NE(dl::test::data_error_of([] { parse_pathfinder_metadata("a b.png 0 1\n\nc d.png 1 1\n", "m.npy"); }).find("m.npy:2: blank"),
            std::string::npos);
  EXPECT_NE(dl::test::data_error_of([] { parse_pathfinder_metadata("../x a.png 0 1\n", "m.npy"); }).find("stay below"), std::string::npos);
  EXPECT_NE(dl::test::data_error_of([] { parse_pathfinder_metadata("imgs/0 a.jpg 0 1\n", "m.npy"); }).find(".png"), std::string::npos);
  EXPECT_NE(dl::test::data_error_of([] { parse_pathfinder_metadata("imgs/0 a.png -3 1\n", "m.npy"); }).find("sample index"),
            std::string::npos);
}

// Writes the documentation grid when DL_WRITE_DOCS is set (not a check; run by hand to refresh docs/).
TEST(Pathfinder, WriteDocsGrid) {
  const char* out = std::getenv("DL_WRITE_DOCS");
  if (!out) GTEST_SKIP() << "set DL_WRITE_DOCS=<dir> to write pathfinder_grid.png";
  const Dataset d = make_pathfinder(pathfinder_config(128, 14), 8, 3);
  write_pathfinder_grid((fs::path(out) / "pathfinder_grid.png").string(), d, 128, 8, 4);
  for (const Example& e : d.examples) std::printf("%d ", e.label);  // for the caption in docs/data.md
  std::printf("\n");
}
