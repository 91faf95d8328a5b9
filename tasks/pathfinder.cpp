// tasks/pathfinder.cpp - the Pathfinder contour generator (see pathfinder.h; file I/O is pathfinder_io.cpp).
//
// How an image is made (after Linsley et al. 2018, "Learning long-range spatial dependencies with
// horizontal gated recurrent units"; parameters after LRA, Tay et al. 2020):
//   1. Grow two main paths of contour_length paddles each. A path starts at a random point with a random
//      heading; each paddle is a short segment, the next starts a gap further on, and the heading turns by
//      the path's constant curvature plus a small jitter, so paths bend smoothly. A paddle is accepted only
//      if it stays inside the image and keeps `clearance` from every other stroke (other paths and this
//      path's older paddles), so paths never touch or cross: connectivity is then unambiguous.
//   2. Grow distractor paths (shorter, same rules, no markers).
//   3. Put markers on two ends: both ends of path A (label 1) or one end of A and one end of B (label 0).
//      All four path ends must be clear of other strokes by the marker radius, whatever the label, so the
//      surroundings of a marker do not give the label away.
//   4. Rasterise strokes and discs on a finer grid and average down (antialiasing, as the official
//      generator's antialias_scale).
// Coordinates are pixels with (0, 0) the top-left corner of the image; y grows downwards.
#include "tasks/pathfinder.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace dl::tasks {
namespace {

double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
double uniform(std::mt19937_64& rng, double lo, double hi) { return lo + (hi - lo) * uniform01(rng); }

// clang-format off
struct Point { double x, y; };
struct Segment { Point a, b; };

// A stroke sample used for the clearance test: which path and which paddle it belongs to.
struct Sample { Point p; int32_t path; int32_t paddle; };
// clang-format on

class Canvas {
 public:
  Canvas(const PathfinderConfig& c) : c_(c), g_(c.geometry) {}

  // Grows one path of n paddles; returns false (leaving no trace) if it could not be placed.
  bool grow_path(int32_t path_id, int32_t n, std::mt19937_64& rng, std::vector<Segment>& out) {
    const double border = g_.marker_radius + g_.thickness;  // markers must fit inside the image
    Point p{uniform(rng, border, c_.side - border), uniform(rng, border, c_.side - border)};
    double heading = uniform(rng, 0.0, 2.0 * std::numbers::pi);
    const double curvature = uniform(rng, -g_.max_curvature, g_.max_curvature);
    std::vector<Segment> path;
    std::vector<Sample> added;
    for (int32_t i = 0; i < n; ++i) {
      bool placed = false;
      for (int32_t attempt = 0; attempt < 8 && !placed; ++attempt) {
        // The first tries follow the curvature; later ones widen the jitter to steer around obstacles.
        const double spread = g_.turn_jitter * (1.0 + attempt);
        const double h = heading + (i == 0 ? 0.0 : curvature + uniform(rng, -spread, spread));
        const Point q{p.x + g_.paddle_length * std::cos(h), p.y + g_.paddle_length * std::sin(h)};
        if (q.x < border || q.y < border || q.x > c_.side - border || q.y > c_.side - border) continue;
        std::vector<Sample> s = sample_segment({p, q}, path_id, i);
        if (!clear(s, added)) continue;
        path.push_back({p, q});
        added.insert(added.end(), s.begin(), s.end());
        heading = h;
        p = {q.x + g_.paddle_gap * std::cos(h), q.y + g_.paddle_gap * std::sin(h)};
        placed = true;
      }
      if (!placed) return false;
    }
    samples_.insert(samples_.end(), added.begin(), added.end());
    out = std::move(path);
    return true;
  }

  // True if point p is at least `distance` from every stroke not belonging to path `except`.
  bool far_from_others(Point p, double distance, int32_t except) const {
    for (const Sample& s : samples_)
      if (s.path != except && dist2(p, s.p) < distance * distance) return false;
    return true;
  }

 private:
  static double dist2(Point a, Point b) { return (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y); }

  std::vector<Sample> sample_segment(Segment s, int32_t path, int32_t paddle) const {
    const double len = std::hypot(s.b.x - s.a.x, s.b.y - s.a.y);
    const int32_t k = std::max(2, int32_t(std::ceil(len / 0.5)) + 1);  // a sample every half pixel
    std::vector<Sample> out;
    for (int32_t j = 0; j < k; ++j) {
      const double t = double(j) / (k - 1);
      out.push_back({{s.a.x + t * (s.b.x - s.a.x), s.a.y + t * (s.b.y - s.a.y)}, path, paddle});
    }
    return out;
  }

  // Clearance against all placed strokes and against this path's own paddles older than the previous one
  // (the previous paddle is a gap away by construction; older ones must not be approached by a tight curl).
  bool clear(const std::vector<Sample>& cand, const std::vector<Sample>& own) const {
    const double c2 = g_.clearance * g_.clearance;
    for (const Sample& a : cand) {
      for (const Sample& b : samples_)
        if (dist2(a.p, b.p) < c2) return false;
      for (const Sample& b : own)
        if (b.paddle < a.paddle - 1 && dist2(a.p, b.p) < c2) return false;
    }
    return true;
  }

  const PathfinderConfig& c_;
  const PathfinderGeometry& g_;
  std::vector<Sample> samples_;
};

// Antialiased rasteriser: coverage of `ss` x `ss` subpixels per pixel; strokes are flat-ended rectangles.
class Raster {
 public:
  Raster(int32_t side, int32_t ss) : side_(side), ss_(ss), hi_(size_t(side * ss) * (side * ss), 0) {}

  void stroke(Segment s, double width) {
    const double r = width / 2.0;
    const double dx = s.b.x - s.a.x, dy = s.b.y - s.a.y, len2 = std::max(1e-12, dx * dx + dy * dy);
    fill_box(std::min(s.a.x, s.b.x) - r, std::min(s.a.y, s.b.y) - r, std::max(s.a.x, s.b.x) + r, std::max(s.a.y, s.b.y) + r,
             [&](double x, double y) {
               // Flat-ended paddles (rectangles), as in the original: round caps would fill the gaps.
               const double t = ((x - s.a.x) * dx + (y - s.a.y) * dy) / len2;
               if (t < 0.0 || t > 1.0) return false;
               const double ex = x - (s.a.x + t * dx), ey = y - (s.a.y + t * dy);
               return ex * ex + ey * ey <= r * r;
             });
  }

  void disc(Point c, double r) {
    fill_box(c.x - r, c.y - r, c.x + r, c.y + r,
             [&](double x, double y) { return (x - c.x) * (x - c.x) + (y - c.y) * (y - c.y) <= r * r; });
  }

  std::vector<uint8_t> downsample() const {
    std::vector<uint8_t> out(size_t(side_) * side_);
    const int32_t W = side_ * ss_;
    for (int32_t y = 0; y < side_; ++y)
      for (int32_t x = 0; x < side_; ++x) {
        int32_t covered = 0;
        for (int32_t sy = 0; sy < ss_; ++sy)
          for (int32_t sx = 0; sx < ss_; ++sx) covered += hi_[size_t(y * ss_ + sy) * W + (x * ss_ + sx)];
        out[size_t(y) * side_ + x] = uint8_t(std::lround(255.0 * covered / (ss_ * ss_)));
      }
    return out;
  }

 private:
  template <class Inside> void fill_box(double x0, double y0, double x1, double y1, Inside inside) {
    const int32_t W = side_ * ss_;
    const int32_t i0 = std::max(0, int32_t(std::floor(x0 * ss_))), i1 = std::min(W - 1, int32_t(std::ceil(x1 * ss_)));
    const int32_t j0 = std::max(0, int32_t(std::floor(y0 * ss_))), j1 = std::min(W - 1, int32_t(std::ceil(y1 * ss_)));
    for (int32_t j = j0; j <= j1; ++j)
      for (int32_t i = i0; i <= i1; ++i)
        if (inside((i + 0.5) / ss_, (j + 0.5) / ss_)) hi_[size_t(j) * W + i] = 1;
  }

  int32_t side_, ss_;
  std::vector<uint8_t> hi_;
};

uint64_t mix64(uint64_t z) {  // splitmix64 finaliser: decorrelates per-example seeds
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

PathfinderGeometry default_pathfinder_geometry(int32_t side, int32_t contour_length) {
  // k = side / 32 scales lengths; strokes thicken more slowly so long paths stay thin relative to the image.
  const double k = side / 32.0;
  PathfinderGeometry g;
  g.paddle_length = 2.0 * k;
  g.paddle_gap = 1.0 + 0.6 * (k - 1.0);
  g.thickness = 1.0 + 0.5 * std::log2(std::max(1.0, k));
  g.marker_radius = side <= 32 ? 1.5 : side <= 64 ? 2.5 : side <= 128 ? 3.0 : 5.0;  // LRA's marker_radius
  g.clearance = g.thickness + std::max(1.0, g.paddle_gap);
  g.supersample = side <= 64 ? 4 : 2;
  // LRA: distractor_length = contour_length / 3, num_distractor_snakes = budget / distractor_length.
  g.distractor_length = std::max(1, contour_length / 3);
  const double budget = side <= 32 ? 20 : side <= 64 ? 22 : side <= 128 ? 35 : 30;
  g.num_distractors = int32_t(std::lround(budget / (contour_length / 3.0)));
  return g;
}

PathfinderConfig pathfinder_config(int32_t side, int32_t contour_length) {
  return {side, contour_length, default_pathfinder_geometry(side, contour_length)};
}

std::string pathfinder_level_name(int32_t contour_length) {
  return contour_length == 6 ? "curv_baseline" : "curv_contour_length_" + std::to_string(contour_length);
}

PathfinderSample render_pathfinder(const PathfinderConfig& config, int32_t label, std::mt19937_64& rng) {
  if (config.side < 16 || config.contour_length < 1 || (label != 0 && label != 1))
    throw DataError("render_pathfinder: need side >= 16, contour_length >= 1 and label 0/1, found side " +
                    std::to_string(config.side) + ", contour_length " + std::to_string(config.contour_length) + ", label " +
                    std::to_string(label));
  const PathfinderGeometry& g = config.geometry;
  for (int32_t image_try = 0; image_try < 200; ++image_try) {
    Canvas canvas(config);
    std::vector<Segment> path_a, path_b;
    bool ok = false;
    for (int32_t t = 0; t < 50 && !ok; ++t) ok = canvas.grow_path(0, config.contour_length, rng, path_a);
    if (!ok) continue;
    ok = false;
    for (int32_t t = 0; t < 50 && !ok; ++t) ok = canvas.grow_path(1, config.contour_length, rng, path_b);
    if (!ok) continue;
    std::vector<std::vector<Segment>> distractors;
    for (int32_t d = 0; d < g.num_distractors; ++d) {
      std::vector<Segment> s;
      for (int32_t t = 0; t < 20; ++t)
        if (canvas.grow_path(2 + d, g.distractor_length, rng, s)) {
          distractors.push_back(std::move(s));
          break;
        }
    }
    // All four main-path ends must have room for a marker, so no end is distinguishable by crowding.
    const Point ends[4] = {path_a.front().a, path_a.back().b, path_b.front().a, path_b.back().b};
    const double room = g.marker_radius + g.thickness / 2.0 + 1.0;
    bool room_ok = true;
    for (int32_t e = 0; e < 4; ++e) room_ok = room_ok && canvas.far_from_others(ends[e], room, e < 2 ? 0 : 1);
    if (!room_ok) continue;

    // Label 1: both ends of path A. Label 0: a random end of A and a random end of B.
    Point m0, m1;
    if (label == 1) {
      m0 = ends[0];
      m1 = ends[1];
    } else {
      m0 = ends[rng() & 1];
      m1 = ends[2 + (rng() & 1)];
    }
    if (rng() & 1) std::swap(m0, m1);  // which marker comes first carries no information

    Raster raster(config.side, g.supersample);
    for (const auto* path : {&path_a, &path_b})
      for (const Segment& s : *path) raster.stroke(s, g.thickness);
    for (const auto& path : distractors)
      for (const Segment& s : path) raster.stroke(s, g.thickness);
    raster.disc(m0, g.marker_radius);
    raster.disc(m1, g.marker_radius);
    PathfinderSample out;
    out.pixels = raster.downsample();
    out.label = label;
    out.marker_xy[0][0] = m0.x, out.marker_xy[0][1] = m0.y;
    out.marker_xy[1][0] = m1.x, out.marker_xy[1][1] = m1.y;
    return out;
  }
  throw DataError("render_pathfinder: could not place two paths of " + std::to_string(config.contour_length) + " paddles in a " +
                  std::to_string(config.side) + "-pixel image after 200 tries (geometry too large)");
}

Dataset make_pathfinder(const PathfinderConfig& config, int64_t num_examples, uint64_t seed, const std::string& name) {
  Dataset d;
  d.name = name.empty() ? "pathfinder" + std::to_string(config.side) + "/" + pathfinder_level_name(config.contour_length) : name;
  d.vocab_size = 256;
  d.num_classes = 2;
  d.pad_id = 0;  // never used: every image has exactly side*side tokens
  d.max_len = config.side * config.side;
  d.class_names = {"disconnected", "connected"};
  // Exactly balanced labels in a seeded random order.
  std::vector<int32_t> labels(static_cast<size_t>(num_examples));
  for (int64_t i = 0; i < num_examples; ++i) labels[size_t(i)] = int32_t(i % 2);
  std::mt19937_64 order_rng(mix64(seed));
  for (int64_t i = num_examples - 1; i > 0; --i) std::swap(labels[size_t(i)], labels[order_rng() % uint64_t(i + 1)]);
  d.examples.resize(size_t(num_examples));
  for (int64_t i = 0; i < num_examples; ++i) {
    std::mt19937_64 rng(mix64(seed ^ mix64(uint64_t(i) + 1)));
    PathfinderSample s = render_pathfinder(config, labels[size_t(i)], rng);
    Example& e = d.examples[size_t(i)];
    e.tokens.assign(s.pixels.begin(), s.pixels.end());  // pixel value = token id
    e.label = s.label;
  }
  return d;
}

}  // namespace dl::tasks
