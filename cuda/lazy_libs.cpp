// cuda/lazy_libs.cpp - cuBLAS, cuFFT and NCCL opened on their first call (why and where they are looked for: the
// header). Compiled by the host compiler into dl_cuda in a CUDA build; the sonames and the built-at files come from
// CMakeLists.txt (DL_CUBLAS_SONAME, DL_CUBLAS_FILE, ...; DL_HAVE_NCCL when the build has the NCCL communicator).
#include "cuda/lazy_libs.h"

#include <cublas_v2.h>
#include <cufft.h>
#include <dlfcn.h>
#include <link.h>

#include <map>
#include <mutex>

#include "tensor/tensor.h"  // fail
#ifdef DL_HAVE_NCCL
#include <nccl.h>
#endif

namespace dl::cuda {

namespace {

const LazyLibrary kCublas{"cuBLAS", DL_CUBLAS_SONAME, DL_CUBLAS_FILE};
const LazyLibrary kCufft{"cuFFT", DL_CUFFT_SONAME, DL_CUFFT_FILE};
#ifdef DL_HAVE_NCCL
const LazyLibrary kNccl{"NCCL", DL_NCCL_SONAME, DL_NCCL_FILE};
#endif

std::mutex g_mu;
std::map<std::string, void*>& handles() {  // soname -> handle, for the life of the process (never dlclose'd)
  static std::map<std::string, void*> h;
  return h;
}

std::string where_from(void* handle) {
  link_map* m = nullptr;
  return dlinfo(handle, RTLD_DI_LINKMAP, &m) == 0 && m && m->l_name ? m->l_name : "?";
}

}  // namespace

void* open_library(const LazyLibrary& lib) {
  std::lock_guard<std::mutex> lock(g_mu);
  void*& h = handles()[lib.soname];
  if (h) return h;
  h = dlopen(lib.soname, RTLD_NOW | RTLD_LOCAL);
  if (h) return h;
  const std::string first = dlerror();
  if (lib.built_at[0]) h = dlopen(lib.built_at, RTLD_NOW | RTLD_LOCAL);
  if (h) return h;
  fail(std::string(lib.what) + ": cannot open " + lib.soname + " (" + first + ")" +
       (lib.built_at[0] ? std::string(", nor the file the build used, ") + lib.built_at + " (" + dlerror() + ")" : std::string()) +
       "; put the folder that holds " + lib.soname + " on LD_LIBRARY_PATH");
}

void* library_symbol(const LazyLibrary& lib, const char* name) {
  void* h = open_library(lib);
  void* f = dlsym(h, name);
  if (!f) fail(std::string(lib.what) + ": " + lib.soname + " (" + where_from(h) + ") has no function " + name);
  return f;
}

bool library_loaded(const LazyLibrary& lib) {
  void* h = dlopen(lib.soname, RTLD_NOW | RTLD_NOLOAD);
  if (!h && lib.built_at[0]) h = dlopen(lib.built_at, RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);  // NOLOAD took a reference: give it back
  return h != nullptr;
}

const std::vector<LazyLibrary>& lazy_libraries() {
#ifdef DL_HAVE_NCCL
  static const std::vector<LazyLibrary> libs{kCublas, kCufft, kNccl};
#else
  static const std::vector<LazyLibrary> libs{kCublas, kCufft};
#endif
  return libs;
}

std::vector<std::string> library_report() {
  auto version = [](const char* what, int major, int minor, int patch, void* h) {
    return std::string(what) + " " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch) + " (" +
           where_from(h) + ")";
  };
  std::vector<std::string> lines;
  int v[3] = {0, 0, 0};
  cublasGetProperty(MAJOR_VERSION, &v[0]), cublasGetProperty(MINOR_VERSION, &v[1]), cublasGetProperty(PATCH_LEVEL, &v[2]);
  lines.push_back(version("cuBLAS", v[0], v[1], v[2], open_library(kCublas)));
  cufftGetProperty(MAJOR_VERSION, &v[0]), cufftGetProperty(MINOR_VERSION, &v[1]), cufftGetProperty(PATCH_LEVEL, &v[2]);
  lines.push_back(version("cuFFT", v[0], v[1], v[2], open_library(kCufft)));
#ifdef DL_HAVE_NCCL
  int code = 0;  // major * 10000 + minor * 100 + patch (NCCL >= 2.9)
  ncclGetVersion(&code);
  lines.push_back(version("NCCL", code / 10000, code / 100 % 100, code % 100, open_library(kNccl)));
#endif
  return lines;
}

}  // namespace dl::cuda

// ---- the functions the project calls, each opening its library on first use -----------------------------------------
// DL_LAZY(library, return type, name, (parameters), (arguments)): a definition of the vendor's function with its own
// name and signature (checked against the header included above) that calls the library's.
#define DL_LAZY(lib, ret, name, params, args)                                              \
  extern "C" ret name params {                                                             \
    static const auto f = reinterpret_cast<ret(*) params>(dl::cuda::library_symbol(lib, #name)); \
    return f args;                                                                         \
  }

using dl::cuda::kCublas;
using dl::cuda::kCufft;

DL_LAZY(kCublas, cublasStatus_t, cublasCreate_v2, (cublasHandle_t * h), (h))
DL_LAZY(kCublas, cublasStatus_t, cublasDestroy_v2, (cublasHandle_t h), (h))
DL_LAZY(kCublas, cublasStatus_t, cublasSetWorkspace_v2, (cublasHandle_t h, void* w, size_t bytes), (h, w, bytes))
DL_LAZY(kCublas, const char*, cublasGetStatusName, (cublasStatus_t s), (s))
DL_LAZY(kCublas, const char*, cublasGetStatusString, (cublasStatus_t s), (s))
DL_LAZY(kCublas, cublasStatus_t, cublasGetProperty, (libraryPropertyType t, int* v), (t, v))
DL_LAZY(kCublas, cublasStatus_t, cublasSgemm_v2,
        (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* alpha, const float* A,
         int lda, const float* B, int ldb, const float* beta, float* C, int ldc),
        (h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))
DL_LAZY(kCublas, cublasStatus_t, cublasDgemm_v2,
        (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const double* alpha, const double* A,
         int lda, const double* B, int ldb, const double* beta, double* C, int ldc),
        (h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))
DL_LAZY(kCublas, cublasStatus_t, cublasSgemmStridedBatched,
        (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* alpha, const float* A,
         int lda, long long sa, const float* B, int ldb, long long sb, const float* beta, float* C, int ldc, long long sc, int batch),
        (h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch))
DL_LAZY(kCublas, cublasStatus_t, cublasDgemmStridedBatched,
        (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const double* alpha, const double* A,
         int lda, long long sa, const double* B, int ldb, long long sb, const double* beta, double* C, int ldc, long long sc,
         int batch),
        (h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch))
DL_LAZY(kCublas, cublasStatus_t, cublasGemmStridedBatchedEx,
        (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* alpha, const void* A,
         cudaDataType at, int lda, long long sa, const void* B, cudaDataType bt, int ldb, long long sb, const void* beta, void* C,
         cudaDataType ct, int ldc, long long sc, int batch, cublasComputeType_t compute, cublasGemmAlgo_t algo),
        (h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, batch, compute, algo))

DL_LAZY(kCufft, cufftResult, cufftCreate, (cufftHandle * p), (p))
DL_LAZY(kCufft, cufftResult, cufftDestroy, (cufftHandle p), (p))
DL_LAZY(kCufft, cufftResult, cufftSetAutoAllocation, (cufftHandle p, int a), (p, a))
DL_LAZY(kCufft, cufftResult, cufftSetWorkArea, (cufftHandle p, void* w), (p, w))
DL_LAZY(kCufft, cufftResult, cufftGetProperty, (libraryPropertyType t, int* v), (t, v))
DL_LAZY(kCufft, cufftResult, cufftMakePlanMany,
        (cufftHandle p, int rank, int* n, int* inembed, int istride, int idist, int* onembed, int ostride, int odist, cufftType type,
         int batch, size_t* work),
        (p, rank, n, inembed, istride, idist, onembed, ostride, odist, type, batch, work))
DL_LAZY(kCufft, cufftResult, cufftExecR2C, (cufftHandle p, cufftReal* in, cufftComplex* out), (p, in, out))
DL_LAZY(kCufft, cufftResult, cufftExecC2R, (cufftHandle p, cufftComplex* in, cufftReal* out), (p, in, out))
DL_LAZY(kCufft, cufftResult, cufftExecD2Z, (cufftHandle p, cufftDoubleReal* in, cufftDoubleComplex* out), (p, in, out))
DL_LAZY(kCufft, cufftResult, cufftExecZ2D, (cufftHandle p, cufftDoubleComplex* in, cufftDoubleReal* out), (p, in, out))

#ifdef DL_HAVE_NCCL
using dl::cuda::kNccl;
DL_LAZY(kNccl, ncclResult_t, ncclGetVersion, (int* v), (v))
DL_LAZY(kNccl, ncclResult_t, ncclGetUniqueId, (ncclUniqueId * id), (id))
DL_LAZY(kNccl, ncclResult_t, ncclCommInitRank, (ncclComm_t * c, int nranks, ncclUniqueId id, int rank), (c, nranks, id, rank))
DL_LAZY(kNccl, ncclResult_t, ncclCommInitRankConfig, (ncclComm_t * c, int nranks, ncclUniqueId id, int rank, ncclConfig_t* cfg),
        (c, nranks, id, rank, cfg))
DL_LAZY(kNccl, ncclResult_t, ncclCommFinalize, (ncclComm_t c), (c))
DL_LAZY(kNccl, ncclResult_t, ncclCommDestroy, (ncclComm_t c), (c))
DL_LAZY(kNccl, ncclResult_t, ncclCommAbort, (ncclComm_t c), (c))
DL_LAZY(kNccl, const char*, ncclGetErrorString, (ncclResult_t r), (r))
DL_LAZY(kNccl, const char*, ncclGetLastError, (ncclComm_t c), (c))
DL_LAZY(kNccl, ncclResult_t, ncclCommGetAsyncError, (ncclComm_t c, ncclResult_t* e), (c, e))
DL_LAZY(kNccl, ncclResult_t, ncclBroadcast,
        (const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t c, cudaStream_t st), (s, r, n, t, root, c, st))
DL_LAZY(kNccl, ncclResult_t, ncclAllReduce,
        (const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c, cudaStream_t st), (s, r, n, t, op, c, st))
DL_LAZY(kNccl, ncclResult_t, ncclReduceScatter,
        (const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c, cudaStream_t st), (s, r, n, t, op, c, st))
DL_LAZY(kNccl, ncclResult_t, ncclAllGather, (const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t st),
        (s, r, n, t, c, st))
#endif
