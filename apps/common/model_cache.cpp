// apps/common/model_cache.cpp - see model_cache.h.
#include "model_cache.h"

#include <filesystem>
#include <iostream>

#include "results.h"

namespace dl::harness {

namespace fs = std::filesystem;

ModelCache::ModelCache(const std::string& dir, const RunContext& ctx, bool rebuild) : dir_(dir), ctx_(ctx) {
  if (ctx.writer()) lock_ = std::make_unique<FolderLock>(dir, ctx.quiet);  // the other ranks follow rank 0
  if (rebuild && ctx.writer()) fs::remove_all(dir);
  ctx.comm->barrier();
  if (fs::exists(dir + "/info.json")) info_ = read_cache_info(dir), built_ = true;
}

RunContext ModelCache::build_context(const std::string& label, const std::string& what) const {
  if (!ctx_.quiet) std::cerr << what << " (cached in " << dir_ << ")\n";
  RunContext p = ctx_;
  p.dir = dir_, p.resume = true, p.label = label;
  if (ctx_.writer()) fs::create_directories(dir_);
  ctx_.comm->barrier();
  return p;
}

void ModelCache::finish(const json& info, const std::function<void()>& save) {
  if (ctx_.writer()) {
    save();
    write_text_atomic(dir_ + "/info.json", info.dump(2) + "\n");  // last: its presence means "built"
  }
  ctx_.comm->barrier();
  info_ = info, built_ = true;
}

}  // namespace dl::harness
