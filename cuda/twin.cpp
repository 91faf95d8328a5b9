// cuda/twin.cpp - Twin, the host platform of CudaBackend<Twin> (cuda/twin.h): every family of cuda/backend_*.cuh
// compiled by the host compiler, with Thrust's C++ system standing in for CUDA.
//
// What the twin does in place of the GPU (each the GPU's convention, so the shared code above it runs unchanged):
//   par(), view(t)     thrust::cpp::par; a CPU tensor over the same bytes (the pointer unpoisoned)
//   malloc / free      aligned host blocks behind a poisoned pointer, with an optional limit (simulated device memory)
//   the kernels        fill, the row sum (f64 accumulation), the row softmax, the complex product: host loops with the
//                      formulas of cuda/kernels.cu
//   gemm               cblas_{s,d}gemm in column-major order, one call per batch, with cuBLAS's strides (0: shared)
//   rfft / irfft       tensor/fft.h's FFTs, the inverse scaled by n: unnormalised as cuFFT's C2R
// Built when the toolkit's CCCL headers are found (with THRUST_DEVICE_SYSTEM_CPP), into dl_cuda_twin.
#include <cblas.h>
#include <thrust/system/cpp/execution_policy.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <unistd.h>

#include "cuda/backend_attention.cuh"
#include "cuda/backend_elementwise.cuh"
#include "cuda/backend_index.cuh"
#include "cuda/backend_libs.cuh"
#include "cuda/backend_memory.cuh"
#include "cuda/backend_nn.cuh"
#include "cuda/backend_reduce.cuh"
#include "cuda/backend_ssm.cuh"
#include "cuda/twin.h"
#include "tensor/allocator.h"
#include "tensor/elementwise.h"
#include "tensor/fft.h"

namespace dl::cuda {
namespace {

constexpr uintptr_t kPoison = uintptr_t(1) << 62;
void* flip(const void* p) { return p ? (void*)((uintptr_t)p ^ kPoison) : nullptr; }

// A CPU tensor over `nbytes` of host memory at p that it does not own; `keep` is held as long as the tensor lives.
Tensor borrowed(void* p, size_t nbytes, Shape shape, Shape strides, int64_t offset, DType t, std::shared_ptr<void> keep) {
  Storage* s = new Storage(0, Device::cpu);
  host_free(s->data, 0);  // the one small block Storage took; ours points into the twin's memory instead
  s->data = p, s->nbytes = nbytes;
  std::shared_ptr<Storage> alias(s, [keep](Storage* q) {
    q->data = nullptr;  // not ours to free
    delete q;
  });
  return Tensor(alias, std::move(shape), std::move(strides), offset, t);
}
Tensor borrowed(void* p, Shape shape, DType t) {
  Shape strides = contiguous_strides(shape);
  size_t n = (size_t)shape_numel(shape) * dtype_size(t);
  return borrowed(p, n, std::move(shape), std::move(strides), 0, t, nullptr);
}

void on_segv(int) {
  const char msg[] = "\n*** SIGSEGV with the host twin as the cuda device: most likely a CPU kernel read a Device::cuda tensor "
                     "(cuda/twin.h), i.e. an op reached here has no device branch.\n";
  ssize_t r = write(2, msg, sizeof msg - 1);
  (void)r;
  std::signal(SIGSEGV, SIG_DFL);
  std::raise(SIGSEGV);
}

std::atomic<size_t> g_limit{0};
std::atomic<int64_t> g_syncs{0};  // Twin::synchronize() calls

}  // namespace

struct Twin {
  const auto& par() const { return thrust::cpp::par; }
  // A CPU tensor over the same bytes as device tensor t (shape, strides, offset kept); t's storage stays alive.
  Tensor view(const Tensor& t) const {
    if (!t.defined()) return t;
    if (t.device() != Device::cuda)
      fail("host twin: a " + std::string(device_name(t.device())) + " operand " + shape_str(t.shape()) +
           " was handed to the cuda backend");
    std::shared_ptr<Storage> keep = t.storage();
    return borrowed(flip(keep->data), keep->nbytes, t.shape(), t.strides(), t.offset(), t.dtype(), keep);
  }

  // The twin's Thrust temporaries and library scratch are plain host memory (they are never handed to a device op).
  void use_scratch(std::function<void*(size_t)>, std::function<void(void*, size_t)>) {}

  bool probe(std::string& reason) {
    reason.clear();
    return true;
  }
  void synchronize() { g_syncs.fetch_add(1); }  // nothing queued; counted (host_twin_synchronizations)

  void* malloc(size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    size_t limit = g_limit.load();
    if (limit && held_ + n > limit) return nullptr;  // "out of device memory"
    void* p = std::aligned_alloc(64, (n + 63) / 64 * 64);
    if (!p) return nullptr;
    sizes_[p] = n;
    held_ += n;
    return flip(p);
  }
  void free(void* p) {
    if (!p) return;
    std::lock_guard<std::mutex> lock(mu_);
    void* q = flip(p);
    auto it = sizes_.find(q);
    if (it == sizes_.end()) fail("host twin: free of a block it never handed out");
    held_ -= it->second;
    sizes_.erase(it);
    std::free(q);
  }
  void copy(void* dst, const void* src, size_t n, CopyKind kind) {
    if (kind != CopyKind::from_host) src = flip(src);
    if (kind != CopyKind::to_host) dst = flip(dst);
    std::memmove(dst, src, n);
  }
  void memset_zero(void* p, size_t n) { std::memset(flip(p), 0, n); }
  void copy_rows(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t rows) {
    char* d = (char*)flip(dst);
    const char* s = (const char*)flip(src);
    for (size_t r = 0; r < rows; r++) std::memcpy(d + r * dpitch, s + r * spitch, width);
  }

  // ---- the kernels of cuda/kernels.cu, as loops ----
  void fill(void* out, int64_t n, DType t, double v) {
    dispatch_all(t, "fill (cuda)", [&]<class T>() { std::fill_n((T*)flip(out), n, (T)v); });
  }
  void sum_last(const void* x, void* out, int64_t rows, int64_t cols, DType t) {
    dispatch_float(t, "sum_last (cuda)", [&]<class T>() {
      const T* px = (const T*)flip(x);
      T* po = (T*)flip(out);
      for (int64_t r = 0; r < rows; r++) {
        double acc = 0;  // f64 accumulation, as the kernel's block reduction
        for (int64_t j = 0; j < cols; j++) acc += (double)px[r * cols + j];
        po[r] = (T)acc;
      }
    });
  }
  void softmax_last(const void* x, void* out, int64_t rows, int64_t cols, DType t) {
    if (rows == 0 || cols == 0) return;
    dispatch_float(t, "softmax_last (cuda)", [&]<class T>() {
      const T* px = (const T*)flip(x);
      T* po = (T*)flip(out);
      for (int64_t r = 0; r < rows; r++) {
        const T* in = px + r * cols;
        T m = -INFINITY, s = 0;
        for (int64_t j = 0; j < cols; j++) m = in[j] > m ? in[j] : m;
        for (int64_t j = 0; j < cols; j++) s += ops::m_exp(in[j] - m);
        T inv = (T)1 / s;
        for (int64_t j = 0; j < cols; j++) po[r * cols + j] = ops::m_exp(in[j] - m) * inv;
      }
    });
  }
  void complex_mul(void* a, const void* b, int64_t n, double scale, DType t) {
    dispatch_float(t, "fft_conv (cuda)", [&]<class T>() {
      T* pa = (T*)flip(a);
      const T* pb = (const T*)flip(b);
      for (int64_t i = 0; i < n; i++) {
        T xr = pa[2 * i], xi = pa[2 * i + 1], yr = pb[2 * i], yi = pb[2 * i + 1];
        pa[2 * i] = (xr * yr - xi * yi) * (T)scale;
        pa[2 * i + 1] = (xr * yi + xi * yr) * (T)scale;
      }
    });
  }

  // ---- cuBLAS's and cuFFT's conventions on the CPU's libraries ----
  void gemm(DType t, int m, int n, int k, const void* a, int lda, int64_t sa, const void* b, int ldb, int64_t sb, void* c,
            int ldc, int64_t sc, int batch) {
    for (int i = 0; i < batch; i++) {
      if (t == DType::f32)
        cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, (const float*)flip(a) + i * sa, lda,
                    (const float*)flip(b) + i * sb, ldb, 0.0f, (float*)flip(c) + i * sc, ldc);
      else if (t == DType::f64)
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, (const double*)flip(a) + i * sa, lda,
                    (const double*)flip(b) + i * sb, ldb, 0.0, (double*)flip(c) + i * sc, ldc);
      else fail(std::string("matmul (cuda): expected f32 or f64, found ") + dtype_name(t));
    }
  }
  void rfft(DType t, int64_t n, int64_t rows, const void* in, void* out) {
    Tensor X = dl::rfft(borrowed(flip(in), {rows, n}, t), n);  // (rows, n/2 + 1, 2)
    borrowed(flip(out), X.shape(), t).copy_(X);
  }
  void irfft(DType t, int64_t n, int64_t rows, const void* in, void* out) {
    Tensor x = mul_scalar(dl::irfft(borrowed(flip(in), {rows, n / 2 + 1, 2}, t), n), (double)n);  // unnormalised
    borrowed(flip(out), {rows, n}, t).copy_(x);
  }

 private:
  std::mutex mu_;
  std::unordered_map<void*, size_t> sizes_;
  size_t held_ = 0;
};

DL_CUDA_MEMORY_FAMILY(Twin)
DL_CUDA_ELEMENTWISE_FAMILY(Twin)
DL_CUDA_REDUCE_FAMILY(Twin)
DL_CUDA_NN_FAMILY(Twin)
DL_CUDA_INDEX_FAMILY(Twin)
DL_CUDA_LIBS_FAMILY(Twin)
DL_CUDA_SSM_FAMILY(Twin)
DL_CUDA_ATTENTION_FAMILY(Twin)

Backend& host_twin() {
  static Backend* twin = [] {
    std::signal(SIGSEGV, on_segv);
    return new CudaBackend<Twin>();  // never destroyed, as the GPU's
  }();
  return *twin;
}

int64_t host_twin_synchronizations() { return g_syncs.load(); }
int64_t host_twin_allocations() { return static_cast<CudaBackend<Twin>&>(host_twin()).allocator().requests(); }

void set_host_twin_memory_limit(size_t bytes) { g_limit.store(bytes); }

}  // namespace dl::cuda
