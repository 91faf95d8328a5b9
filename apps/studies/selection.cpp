// apps/studies/selection.cpp - see selection.h.
#include "selection.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "apps/common/jobs.h"
#include "apps/common/results.h"

namespace studies {

namespace fs = std::filesystem;
namespace harness = dl::harness;
using harness::json;

namespace {

// The lock of a point, taken only if free (FolderLock, jobs.h, waits for it): held while the object lives.
class TryLock {
 public:
  explicit TryLock(const std::string& dir) {
    const std::string path = fs::path(dir).lexically_normal().string() + ".lock";  // FolderLock's file
    fd_ = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error(path + ": cannot open the selection lock: " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) ::close(fd_), fd_ = -1;
  }
  ~TryLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the flock
  }
  TryLock(const TryLock&) = delete;
  TryLock& operator=(const TryLock&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

json read_json(const std::string& path) { return harness::parse_json(harness::read_text(path), path); }

// The point's result: its result.json when that holds this config, else trained in its folder now.
json point_result(const std::string& dir, const SelectionPoint& p, size_t i, const harness::RunContext& ctx,
                  const PointTrainer& train) {
  const std::string result = dir + "/result.json", config = dir + "/config.json";
  if (fs::exists(result)) {
    const json r = read_json(result);
    if (r.value("config", json()) == p.config) return r.at("result");
  }
  // Checkpoints are resumed only with --resume and only when they were written for this config.
  const bool resume = ctx.resume && fs::exists(config) && read_json(config) == p.config;
  if (ctx.writer()) {
    if (!resume) fs::remove_all(dir);
    fs::create_directories(dir);
    harness::write_text_atomic(config, p.config.dump(2) + "\n");
  }
  ctx.comm->barrier();
  harness::RunContext pctx = ctx;
  pctx.dir = dir, pctx.resume = resume, pctx.label = p.label;
  const json r = train(i, pctx);
  if (ctx.writer()) harness::write_text_atomic(result, json{{"config", p.config}, {"result", r}}.dump(2) + "\n");
  ctx.comm->barrier();
  return r;
}

}  // namespace

std::vector<json> run_selection(const harness::RunContext& ctx, const std::string& group,
                                const std::vector<SelectionPoint>& points, const PointTrainer& train) {
  const std::string root = ctx.out + "/selection/" + group;
  if (ctx.writer()) fs::create_directories(root);
  std::vector<json> out(points.size());
  std::vector<bool> done(points.size(), false);
  size_t reused = 0;  // points whose result.json was there already (counted before; a config mismatch retrains)
  // Pass 0 (one process): the points no other worker holds. Pass 1: the rest, waiting for each lock.
  for (int pass = ctx.comm->size() == 1 ? 0 : 1; pass < 2; pass++)
    for (size_t i = 0; i < points.size(); i++) {
      if (done[i]) continue;
      const std::string dir = root + "/" + points[i].name;
      std::unique_ptr<TryLock> free_lock;
      std::unique_ptr<harness::FolderLock> waited_lock;
      if (pass == 0) {
        free_lock = std::make_unique<TryLock>(dir);
        if (!free_lock->held()) continue;  // another worker trains it: come back in pass 1
      } else if (ctx.writer()) {
        waited_lock = std::make_unique<harness::FolderLock>(dir, ctx.quiet);
      }
      reused += fs::exists(dir + "/result.json");
      out[i] = point_result(dir, points[i], i, ctx, train);
      done[i] = true;
    }
  if (reused > 0 && !ctx.quiet && ctx.writer())
    std::cerr << ctx.label << " selection: " << reused << " of " << points.size() << " points trained earlier in " << root
              << ", reused\n";
  return out;
}

size_t best_index(const std::vector<double>& scores) {
  if (scores.empty()) throw std::invalid_argument("best_index: no score to choose from");
  size_t best = 0;
  for (size_t k = 1; k < scores.size(); k++)
    if (scores[k] > scores[best]) best = k;
  return best;
}

}  // namespace studies
