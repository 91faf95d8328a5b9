// apps/common/model_cache.h - a pretrained model built once and shared through a cache folder: fpt's pretrained
// transformers and pretrained_convs' span-corruption models. Every run, --jobs worker and data-parallel rank that
// needs the model opens the cache; the first to come builds it while the others wait on the folder's lock
// (jobs.h FolderLock), then find it built.
//
//   ModelCache cache(dir, ctx, rebuild);      rank 0 takes the lock (and empties the folder when rebuild); all meet
//   if (cache.built()) ... cache.info() ...   <dir>/info.json is there, so the weights beside it are complete
//   RunContext pctx = cache.build_context(label, what);   says what it builds (unless quiet), makes the folder; its
//                                             checkpoints resume, so a killed build goes on where it stopped
//   ... train, fill info ...
//   cache.finish(info, save);                 rank 0 calls save() and then writes info.json, last and atomically:
//                                             its presence is what "built" means
// The lock is held until the ModelCache is destroyed. What it is not: a key scheme (each app names its folder).
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "jobs.h"
#include "phase.h"

namespace dl::harness {

class ModelCache {
 public:
  ModelCache(const std::string& dir, const RunContext& ctx, bool rebuild);
  bool built() const { return built_; }
  const json& info() const { return info_; }  // read_cache_info(dir) once built, null before
  // ctx for the build's training phases: dir = the cache folder, resume on, the given log label; first prints
  // "<what> (cached in <dir>)" unless quiet.
  RunContext build_context(const std::string& label, const std::string& what) const;
  void finish(const json& info, const std::function<void()>& save);

 private:
  std::string dir_;
  RunContext ctx_;
  std::unique_ptr<FolderLock> lock_;
  bool built_ = false;
  json info_;
};

}  // namespace dl::harness
