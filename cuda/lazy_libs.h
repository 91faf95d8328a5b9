// cuda/lazy_libs.h - cuBLAS, cuFFT and NCCL are opened on their first call, not when a program starts.
//
// Linked the ordinary way, every binary of the CUDA build loaded libcublas, libcublasLt, libcufft and libnccl at
// start: 0.4 s and 240 MB of resident memory for each process (`lra_benchmark --help`: 240 MB, against 13 MB in a
// build without CUDA), on every CPU run, every test process and in every peak-memory figure. Nothing of it is used
// until a tensor is on the device or a communicator is NCCL's.
//
// So the binaries are not linked against those libraries. cuda/lazy_libs.cpp defines each function the project
// calls (cublasSgemmStridedBatched, cufftExecR2C, ncclAllReduce, ...) with the library's own name and signature (the
// vendor's header is included, so a signature that drifts is a compile error); its first call opens the library with
// dlopen and every call goes on to the library's function. The backend's code calls the vendor API as written.
//
// Where a library is looked for: its soname (libcublas.so.13) by the dynamic loader's rules (LD_LIBRARY_PATH, which
// scripts/gpu_check.sh sets on a GPU machine, then ld.so.cache and the system folders), then the file the build
// found (CMakeLists.txt writes both in). A library that cannot be opened is an error naming both places and dlerror.
// cudart stays linked statically: it opens the driver (libcuda.so.1) itself, on its first call.
#pragma once
#include <string>
#include <vector>

namespace dl::cuda {

struct LazyLibrary {
  const char* what;      // "cuBLAS"
  const char* soname;    // "libcublas.so.13"
  const char* built_at;  // the file the build linked against, or "" (tried second)
};

// The library's handle, opened on the first call (thread-safe); throws dl::ShapeError naming the library, both
// places it looked and dlerror() when neither opens.
void* open_library(const LazyLibrary& lib);
// The address of `name` in the library, opened if need be; throws naming the function and the library.
void* library_symbol(const LazyLibrary& lib, const char* name);

// The libraries this build opens on first use, in the order cuBLAS, cuFFT (and NCCL when built with it).
const std::vector<LazyLibrary>& lazy_libraries();
// Opens each one and says what it is: "cuBLAS 13.1.0 (/usr/local/cuda/lib/libcublas.so.13)"; one line each. Needs no
// device (scripts/gpu_check.sh's smoke driver prints it first, so a GPU machine that lacks one is named at once).
std::vector<std::string> library_report();
// Whether a library of this process's is mapped now (dlopen with RTLD_NOLOAD): false for all three until used.
bool library_loaded(const LazyLibrary& lib);

}  // namespace dl::cuda
