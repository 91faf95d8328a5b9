// tests/cuda/smoke/smoke_nccl_stub.cpp - linked into gpu_smoke when the build has no NCCL (CMakeLists.txt: DL_HAVE_NCCL):
// the NCCL items are reported skipped, naming why, so a summary never reads a missing NCCL as a pass.
#include "tests/cuda/smoke/smoke.h"

namespace dl::smoke {

void run_nccl_items(Report& r, const std::string& skip) {
  const std::string why = !skip.empty() ? skip : "skipped: this build has no NCCL (CMake: dl: NCCL OFF)";
  for (const char* item : {"nccl.init", "nccl.all_reduce", "nccl.reduce_scatter", "nccl.all_gather"})
    r.run(item, [] { return Outcome{}; }, why);
}

}  // namespace dl::smoke
