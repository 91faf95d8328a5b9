// tests/cuda/smoke/smoke_alloc.cpp - the backend's caching allocator through device_backend(Device::cuda)->alloc /
// free (tensor/backend.h), against what its contract says (docs/cuda.md, "Memory"):
//   alloc.reuse      a freed block is handed out again for a request of the same size class, without cudaMalloc
//                    (the same pointer comes back), and a block in use is never handed out twice
//   alloc.sizes      many sizes live at once (1 B to 96 MiB + 7, around the 512 B and 1 MiB class edges): each
//                    block takes a distinct pattern that reads back intact (no two blocks overlap), and after all are
//                    freed the same sizes are served from the cache (the same set of pointers)
//   alloc.too_large  a request larger than any device (2^50 + 1 bytes) fails with an error naming the bytes asked
//                    for (or the size class they round up to), and the allocator serves a normal request afterwards
// Error measure: the number of violations (tolerance 0).
#include <algorithm>
#include <set>

#include "tensor/backend.h"
#include "tests/cuda/smoke/smoke.h"

namespace dl::smoke {
namespace {

Backend& gpu() { return *device_backend(Device::cuda); }

Outcome reuse_item() {
  Outcome o;
  Backend& b = gpu();
  void* p = b.alloc(1000);
  void* q = b.alloc(1000);  // p is in use: q must be another block
  if (p == q) o.max_err++, o.detail += "two live blocks share one pointer; ";
  b.free(p, 1000);
  void* r = b.alloc(1000);
  if (r != p) o.max_err++, o.detail += "a freed 1000 B block was not reused; ";
  b.free(r, 1000);
  void* s = b.alloc(900);  // same 1024 B class
  if (s != p) o.max_err++, o.detail += "a 900 B request did not reuse the freed 1024 B class block; ";
  b.free(s, 900), b.free(q, 1000);
  if (o.detail.empty()) o.detail = "1000 B freed and reused, 900 B served from the same class";
  return o;
}

Outcome sizes_item() {
  Outcome o;
  Backend& b = gpu();
  const std::vector<size_t> sizes = {1,         511,         512,           513,         4096,         65537,
                                     (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 3 << 20, (96u << 20) + 7};
  std::vector<void*> ptrs;
  for (size_t n : sizes) ptrs.push_back(b.alloc(n));
  for (size_t i = 0; i < sizes.size(); i++) {  // a pattern per block, then all read back: overlaps would show
    std::vector<unsigned char> fill(sizes[i], (unsigned char)(17 * i + 3));
    b.copy_from_host(ptrs[i], fill.data(), sizes[i]);
  }
  for (size_t i = 0; i < sizes.size(); i++) {
    std::vector<unsigned char> back(sizes[i]);
    b.copy_to_host(back.data(), ptrs[i], sizes[i]);
    const auto bad = std::count_if(back.begin(), back.end(), [&](unsigned char c) { return c != (unsigned char)(17 * i + 3); });
    if (bad) o.max_err++, o.detail += std::to_string(sizes[i]) + " B block: " + std::to_string(bad) + " bytes overwritten; ";
  }
  std::set<void*> first(ptrs.begin(), ptrs.end());
  if (first.size() != ptrs.size()) o.max_err++, o.detail += "two live blocks share a pointer; ";
  for (size_t i = 0; i < sizes.size(); i++) b.free(ptrs[i], sizes[i]);
  std::vector<void*> again;  // the same sizes again, in the same order: each from its class's cached blocks
  for (size_t n : sizes) again.push_back(b.alloc(n));
  if (std::set<void*>(again.begin(), again.end()) != first) o.max_err++, o.detail += "the same sizes were not all served from the cache; ";
  for (size_t i = 0; i < sizes.size(); i++) b.free(again[i], sizes[i]);
  if (o.detail.empty()) o.detail = std::to_string(sizes.size()) + " sizes from 1 B to 96 MiB + 7, patterns intact, all reused";
  return o;
}

Outcome too_large_item() {
  Outcome o;
  Backend& b = gpu();
  const size_t asked = (size_t(1) << 50) + 1, class_size = (size_t(1) << 50) + (size_t(1) << 47);
  std::string msg;
  try {
    void* p = b.alloc(asked);
    b.free(p, asked);
    o.max_err++, o.detail = "an allocation of 2^50 + 1 bytes succeeded; ";
  } catch (const std::exception& e) {
    msg = e.what();
  }
  if (!msg.empty()) {
    const bool names_asked = msg.find(std::to_string(asked)) != std::string::npos;
    const bool names_class = msg.find(std::to_string(class_size)) != std::string::npos;
    if (!names_asked && !names_class) o.max_err++, o.detail += "the error names neither the bytes asked for nor their class; ";
    o.detail += std::string(names_asked ? "names the bytes asked for" : names_class ? "names the size class (2^50 + 2^47), not the bytes asked for" : "") +
                ": \"" + msg + "\"; ";
  }
  void* p = b.alloc(4096);  // the failure left the allocator (and the CUDA context) usable
  std::vector<unsigned char> x(4096, 7), y(4096, 0);
  b.copy_from_host(p, x.data(), 4096);
  b.copy_to_host(y.data(), p, 4096);
  b.free(p, 4096);
  if (x != y) o.max_err++, o.detail += "a 4096 B block after the failure did not read back; ";
  return o;
}

}  // namespace

void run_alloc_items(Report& r, const std::string& skip) {
  r.run("alloc.reuse", reuse_item, skip);
  r.run("alloc.sizes", sizes_item, skip);
  r.run("alloc.too_large", too_large_item, skip);
}

}  // namespace dl::smoke
