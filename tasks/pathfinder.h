// tasks/pathfinder.h - Pathfinder / Path-X: is there a path between the two markers? (Linsley et al. 2018;
// used by LRA, Tay et al. 2020, at 32x32 and, as Path-X, at 128x128 and 256x256.)
//
// What it is: (1) our own contour generator: two curved paths made of short dashed segments ("paddles")
// that turn smoothly with a random per-path curvature, two round markers on path ends (both ends of the
// SAME path: label 1, "connected"; one end of each path: label 0) and short distractor paths; difficulty
// grows with the path length in paddles (6, 9, 14 = the official curv_baseline, curv_contour_length_9,
// curv_contour_length_14 levels); white strokes on black, grayscale 0-255, flattened row-major into
// side*side pixel tokens (vocab 256). (2) Reader and writer of the official release layout
//     <root>/<level>/imgs/<b>/sample_<i>.png      8-bit grayscale PNG, side x side
//     <root>/<level>/metadata/<b>.npy              text (despite the suffix), one record per line
// (3) a grid renderer for documentation.
// What it is not: a port of drewlinsley/pathfinder (no code was copied; the geometry follows the
// parameters quoted in LRA's lra_benchmarks/data/pathfinder.py), and not a model-side image tokenizer.
//
// Metadata record, as read by LRA's lra_benchmarks/data/pathfinder.py (m_example = line.split(' ')):
//   column 0  image directory relative to the level directory, e.g. "imgs/0"
//   column 1  image file name, e.g. "sample_0.png"      -> image = <root>/<level>/<col0>/<col1>
//   column 2  sample index (written by the original generator; not used by LRA)
//   column 3  label, 0 or 1
//   further columns (generator settings in the release) are ignored. We write exactly 5 columns:
//   "imgs/<b> sample_<i>.png <i> <label> <contour_length>".
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "tasks/dataset.h"

namespace dl::tasks {

// Drawing parameters in pixels. default_pathfinder_geometry() scales them with the image side following
// the LRA settings (marker radius 1.5 / 2.5 / 3 / 5 at 32 / 64 / 128 / 256; distractor length
// contour_length / 3; distractor pixel budget 20 / 22 / 35 / 30 paddles).
struct PathfinderGeometry {
  double paddle_length = 2.0;  // length of one dash
  double paddle_gap = 1.0;     // gap between consecutive dashes of one path
  double thickness = 1.0;      // stroke width
  double marker_radius = 1.5;
  double max_curvature = 0.30;  // |per-path turn per paddle| in radians, drawn uniformly per path
  double turn_jitter = 0.25;    // extra uniform turn per paddle in radians, so paths are not perfect arcs
  double clearance = 2.0;       // minimum distance between strokes of different paths (centre to centre)
  int32_t distractor_length = 4;
  int32_t num_distractors = 5;
  int32_t supersample = 4;  // antialiasing: strokes are rasterised on a grid this many times finer
};

struct PathfinderConfig {
  int32_t side = 32;            // 32, 64, 128 or 256 (any side >= 16 works)
  int32_t contour_length = 14;  // paddles per main path: 6, 9 or 14 in the official levels
  PathfinderGeometry geometry;  // filled by default_pathfinder_geometry; may be edited before use
};

PathfinderGeometry default_pathfinder_geometry(int32_t side, int32_t contour_length);
PathfinderConfig pathfinder_config(int32_t side, int32_t contour_length);  // config with default geometry

// "curv_baseline" (6), "curv_contour_length_9", "curv_contour_length_14"; other lengths give
// "curv_contour_length_<n>".
std::string pathfinder_level_name(int32_t contour_length);

struct PathfinderSample {
  std::vector<uint8_t> pixels;  // (side, side) row-major
  int32_t label = 0;            // 1 = markers on the same path
  double marker_xy[2][2] = {};  // marker centres (x, y) in pixels, for tests and debugging
};

// One image with the requested label. Throws DataError if the geometry cannot fit (after many retries).
PathfinderSample render_pathfinder(const PathfinderConfig& config, int32_t label, std::mt19937_64& rng);

// A balanced dataset: exactly floor(n/2) label-0 and ceil(n/2) label-1 examples in random order. Example
// i uses its own rng seeded from (seed, i), so any example can be regenerated alone.
Dataset make_pathfinder(const PathfinderConfig& config, int64_t num_examples, uint64_t seed, const std::string& name = "");

// ---- official layout -------------------------------------------------------------------------

struct PathfinderMetaRecord {
  std::string image_dir;  // column 0
  std::string file_name;  // column 1
  int64_t index = 0;      // column 2
  int32_t label = 0;      // column 3
};

// Parses a whole metadata file held in memory. `file_name` only labels error messages
// ("<file>:<line>: ..."). Blank lines at the end are allowed; anything malformed throws DataError.
std::vector<PathfinderMetaRecord> parse_pathfinder_metadata(std::string_view text, const std::string& file_name);

// Writes num_examples generated images and their metadata under <root>/<level>/ in batches of
// images_per_batch (the release uses one folder and one metadata file per batch).
void write_pathfinder_official(const std::string& root, const PathfinderConfig& config, int64_t num_examples, uint64_t seed,
                               int64_t images_per_batch = 1000);

struct PathfinderReadOptions {
  int32_t side = 32;             // every PNG must be side x side
  std::vector<int64_t> batches;  // metadata/<b>.npy files to read; empty = all, in numeric order
  int64_t max_examples = -1;     // stop after this many (-1 = all)
};
Dataset read_pathfinder_official(const std::string& root, const std::string& level, const PathfinderReadOptions& options);

// ---- PNG helpers and documentation grid ------------------------------------------------------

void write_gray_png(const std::string& path, const std::vector<uint8_t>& pixels, int32_t width, int32_t height);
// Reads an 8-bit grayscale PNG; throws DataError naming the file if it is missing, not a PNG, not 8-bit
// grayscale or (when expected_width/height > 0) of another size.
std::vector<uint8_t> read_gray_png(const std::string& path, int32_t expected_width = 0, int32_t expected_height = 0);

// Tiles the first `count` examples of a pixel-token dataset into one PNG, `columns` per row, each tile
// framed by a 1-pixel border: light gray (170) = label 1 (connected), dark gray (70) = label 0.
void write_pathfinder_grid(const std::string& path, const Dataset& data, int32_t side, int32_t count, int32_t columns);

}  // namespace dl::tasks
