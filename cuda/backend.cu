// cuda/backend.cu - the CUDA implementation of dl::Backend (tensor/backend.h): device memory, copies,
// cuBLAS matmul, cuFFT convolution, and the dispatch to the hand-written kernels in cuda/kernels.cu.
//
// Memory: a caching allocator with size-class bins (the same rounding idea as tensor/allocator.cpp).
// cudaMalloc runs only on a miss and synchronises the device, so a training step that frees and
// re-allocates its activations must find them in the cache; freed blocks are kept until process exit
// (or until a cudaMalloc fails, when the cache is released and the call retried once). Plain cudaMalloc,
// never managed memory.
// Streams: everything runs on the legacy default stream, so work is ordered and a block freed by one op
// can be handed to the next op at once. Adding streams would require the allocator to record an event
// per block; that is deliberately not done yet.
// What it is not: multi-GPU (the current device, normally 0, is used) or a strided-kernel engine.
#include <cublas_v2.h>
#include <cufft.h>

#include <climits>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "cuda/check.cuh"
#include "cuda/kernels.cuh"
#include "tensor/backend.h"

namespace dl {
namespace {

// ---------------------------------------------------------------------------------------------
// Caching device allocator

// Round a request up to its bin: multiples of 512 B up to 1 MiB (cudaMalloc aligns to 256 B anyway),
// then 8 steps per power of two, so at most 12.5% of a block is unused.
size_t device_bin_size(size_t n) {
  constexpr size_t kSmall = 1u << 20;
  if (n <= kSmall) return (n + 511) & ~size_t(511);
  size_t p = kSmall;
  while (p * 2 <= n) p *= 2;
  size_t step = p / 8;
  return (n + step - 1) / step * step;
}

class DeviceAllocator {
 public:
  void* alloc(size_t nbytes) {
    if (nbytes == 0) return nullptr;
    size_t b = device_bin_size(nbytes);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = bins_.find(b);
      if (it != bins_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_ -= b;
        in_use_ += b;
        return p;
      }
    }
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, b);
    if (e == cudaErrorMemoryAllocation) {  // hand the cache back to the driver and try once more
      cudaGetLastError();
      empty_cache();
      e = cudaMalloc(&p, b);
    }
    if (e != cudaSuccess) {
      cudaGetLastError();
      std::lock_guard<std::mutex> lock(mu_);
      throw std::runtime_error("cuda alloc: cudaMalloc of " + std::to_string(b) + " bytes failed: " + cudaGetErrorString(e) +
                               " (" + std::to_string(in_use_) + " bytes in use by tensors)");
    }
    std::lock_guard<std::mutex> lock(mu_);
    in_use_ += b;
    return p;
  }

  void free(void* p, size_t nbytes) {
    if (!p) return;
    size_t b = device_bin_size(nbytes);
    std::lock_guard<std::mutex> lock(mu_);
    bins_[b].push_back(p);
    in_use_ -= b;
    cached_ += b;
  }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [size, blocks] : bins_)
      for (void* p : blocks) cudaFree(p);  // errors ignored: we are already recovering from one
    bins_.clear();
    cached_ = 0;
  }

 private:
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> bins_;
  size_t in_use_ = 0, cached_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Argument checks (every message names the op, as tensor/ does)

void require_cuda(const Tensor& t, const char* op, const char* what) {
  if (!t.defined()) fail(std::string(op) + " (cuda): " + what + " is undefined");
  if (t.device() != Device::cuda) fail(std::string(op) + " (cuda): " + what + " is on " + device_name(t.device()));
  if (!t.is_contiguous()) fail(std::string(op) + " (cuda): " + what + " " + shape_str(t.shape()) + " must be contiguous");
}

void require_same(const Tensor& a, const Tensor& b, const char* op, const char* wa, const char* wb) {
  if (a.numel() != b.numel())
    fail(std::string(op) + " (cuda): " + wa + " " + shape_str(a.shape()) + " and " + wb + " " + shape_str(b.shape()) +
         " differ in size");
  if (a.dtype() != b.dtype())
    fail(std::string(op) + " (cuda): " + wa + " is " + dtype_name(a.dtype()) + ", " + wb + " is " + dtype_name(b.dtype()));
}

void require_float(const Tensor& t, const char* op) {
  if (t.dtype() != DType::f32 && t.dtype() != DType::f64)
    fail(std::string(op) + " (cuda): expected f32 or f64, found " + dtype_name(t.dtype()));
}

int to_int(int64_t v, const char* op, const char* what) {
  if (v > INT_MAX)
    fail(std::string(op) + " (cuda): " + what + " = " + std::to_string(v) + " exceeds the int range of the library");
  return (int)v;
}

// ---------------------------------------------------------------------------------------------
// The backend

class CudaBackend final : public Backend {
 public:
  std::string name() const override { return "cuda"; }

  // Asked on every device allocation, so it is computed once. No device or no driver is a plain "false".
  bool available() const override {
    std::call_once(available_once_, [this] {
      int n = 0;
      cudaError_t e = cudaGetDeviceCount(&n);
      if (e != cudaSuccess) cudaGetLastError();  // cudaErrorNoDevice, cudaErrorInsufficientDriver, ...
      available_ = e == cudaSuccess && n >= 1;
    });
    return available_;
  }

  // ---- memory ----
  void* alloc(size_t nbytes) override { return allocator_.alloc(nbytes); }
  void free(void* p, size_t nbytes) override { allocator_.free(p, nbytes); }
  void copy_to_host(void* dst, const void* src, size_t n) override {
    if (n) DL_CUDA_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost));
  }
  void copy_from_host(void* dst, const void* src, size_t n) override {
    if (n) DL_CUDA_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice));
  }
  void copy_on_device(void* dst, const void* src, size_t n) override {
    if (n && dst != src) DL_CUDA_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToDevice));
  }

  // ---- elementwise ----
  void fill(const Tensor& out, double value) override {
    require_cuda(out, "fill", "out");
    cuda::launch_fill(out.raw_data(), out.numel(), out.dtype(), value);
  }

  void unary(UnaryOp op, const Tensor& x, const Tensor& out) override {
    require_cuda(x, "unary", "x");
    require_cuda(out, "unary", "out");
    require_same(x, out, "unary", "x", "out");
    require_float(x, "unary");
    cuda::launch_unary(op, x.raw_data(), out.raw_data(), x.numel(), x.dtype());
  }

  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override {
    require_cuda(a, "binary", "a");
    require_cuda(b, "binary", "b");
    require_cuda(out, "binary", "out");
    require_same(a, b, "binary", "a", "b");
    require_same(a, out, "binary", "a", "out");
    cuda::launch_binary(op, a.raw_data(), b.raw_data(), out.raw_data(), a.numel(), a.dtype());
  }

  // ---- matmul: out(B, M, N) = a(B, M, K) @ b(B, K, N), row-major ----
  // cuBLAS is column-major. A row-major (M, N) buffer read column-major is its transpose, so we ask
  // cuBLAS for C^T = B^T A^T: an (N, M) column-major product of b (as N x K, ld N) and a (as K x M, ld K),
  // which lands in memory exactly as row-major C. Rank-2 operands are a batch of one; a batch of one
  // against a batch of B is broadcast with a zero stride.
  void matmul(const Tensor& a, const Tensor& b, const Tensor& out) override {
    const char* op = "matmul";
    require_cuda(a, op, "a");
    require_cuda(b, op, "b");
    require_cuda(out, op, "out");
    require_float(a, op);
    if (a.dtype() != b.dtype() || a.dtype() != out.dtype())
      fail(std::string("matmul (cuda): dtypes differ: a ") + dtype_name(a.dtype()) + ", b " + dtype_name(b.dtype()) + ", out " +
           dtype_name(out.dtype()));
    if ((a.dim() != 2 && a.dim() != 3) || (b.dim() != 2 && b.dim() != 3))
      fail("matmul (cuda): expected a (B, M, K) or (M, K) and b (B, K, N) or (K, N), got a " + shape_str(a.shape()) + " and b " +
           shape_str(b.shape()));
    int64_t Ba = a.dim() == 3 ? a.size(0) : 1, Bb = b.dim() == 3 ? b.size(0) : 1;
    int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
    int64_t B = std::max(Ba, Bb);
    if (b.size(-2) != K || (Ba != Bb && Ba != 1 && Bb != 1))
      fail("matmul (cuda): a " + shape_str(a.shape()) + " and b " + shape_str(b.shape()) + " do not multiply");
    if (out.numel() != B * M * N || out.size(-1) != N)
      fail("matmul (cuda): out " + shape_str(out.shape()) + " should be " + shape_str({B, M, N}));
    if (out.numel() == 0) return;
    if (K == 0) return fill(out, 0.0);
    int m = to_int(N, op, "N"), n = to_int(M, op, "M"), k = to_int(K, op, "K"), batch = to_int(B, op, "B");
    long long sa = Ba == 1 ? 0 : M * K, sb = Bb == 1 ? 0 : K * N, sc = M * N;
    std::lock_guard<std::mutex> lock(blas_mu_);
    cublasHandle_t h = blas_handle();
    if (a.dtype() == DType::f32) {
      const float one = 1, zero = 0;
      DL_CUDA_CHECK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, b.data<float>(), m, sb, a.data<float>(),
                                              k, sa, &zero, out.data<float>(), m, sc, batch));
    } else {
      const double one = 1, zero = 0;
      DL_CUDA_CHECK(cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, b.data<double>(), m, sb,
                                              a.data<double>(), k, sa, &zero, out.data<double>(), m, sc, batch));
    }
  }

  // ---- row reductions ----
  void sum_last(const Tensor& x, const Tensor& out) override {
    require_cuda(x, "sum_last", "x");
    require_cuda(out, "sum_last", "out");
    require_float(x, "sum_last");
    int64_t C = x.dim() == 0 ? 1 : x.size(-1), R = C == 0 ? out.numel() : x.numel() / C;
    if (out.numel() != R || out.dtype() != x.dtype())
      fail("sum_last (cuda): x " + shape_str(x.shape()) + " needs out of " + std::to_string(R) + " elements of " +
           dtype_name(x.dtype()) + ", got " + shape_str(out.shape()) + " " + dtype_name(out.dtype()));
    cuda::launch_sum_last(x.raw_data(), out.raw_data(), R, C, x.dtype());
  }

  void softmax_last(const Tensor& x, const Tensor& out) override {
    require_cuda(x, "softmax_last", "x");
    require_cuda(out, "softmax_last", "out");
    require_same(x, out, "softmax_last", "x", "out");
    require_float(x, "softmax_last");
    int64_t C = x.dim() == 0 ? 1 : x.size(-1);
    if (C == 0) return;
    cuda::launch_softmax_last(x.raw_data(), out.raw_data(), x.numel() / C, C, x.dtype());
  }

  // ---- FFT convolution ----
  // Causal convolution out[t] = sum_{s<=t} a[s] b[t-s] per row, as a product of spectra: zero-padding
  // both rows to n = 2L makes the circular convolution of length n equal the linear one on [0, L).
  // cuFFT's inverse is unnormalised, so the product is scaled by 1/n.
  void fft_conv(const Tensor& a, const Tensor& b, const Tensor& out) override {
    const char* op = "fft_conv";
    require_cuda(a, op, "a");
    require_cuda(b, op, "b");
    require_cuda(out, op, "out");
    require_float(a, op);
    if (a.dim() < 1 || a.shape() != b.shape() || a.shape() != out.shape() || a.dtype() != b.dtype() || a.dtype() != out.dtype())
      fail("fft_conv (cuda): a, b and out must have one shape (R, L) and dtype, got a " + shape_str(a.shape()) + ", b " +
           shape_str(b.shape()) + ", out " + shape_str(out.shape()));
    int64_t L = a.size(-1);
    if (a.numel() == 0) return;
    int64_t R = a.numel() / L, n = 2 * L, nc = L + 1;
    size_t es = dtype_size(a.dtype());  // bytes of one real; a complex is two
    to_int(n, op, "2L");
    to_int(R, op, "rows");

    // scratch from the caching allocator: padded real rows (R, n) and spectra (R, nc)
    struct Scratch {
      DeviceAllocator& al;
      size_t bytes;
      void* p;
      Scratch(DeviceAllocator& al, size_t bytes) : al(al), bytes(bytes), p(al.alloc(bytes)) {}
      ~Scratch() { al.free(p, bytes); }
    };
    Scratch pa(allocator_, R * n * es), pb(allocator_, R * n * es), fa(allocator_, R * nc * 2 * es),
        fb(allocator_, R * nc * 2 * es);
    // rows of L go into rows of n whose second half is zero
    DL_CUDA_CHECK(cudaMemsetAsync(pa.p, 0, pa.bytes));
    DL_CUDA_CHECK(cudaMemsetAsync(pb.p, 0, pb.bytes));
    DL_CUDA_CHECK(cudaMemcpy2DAsync(pa.p, n * es, a.raw_data(), L * es, L * es, R, cudaMemcpyDeviceToDevice));
    DL_CUDA_CHECK(cudaMemcpy2DAsync(pb.p, n * es, b.raw_data(), L * es, L * es, R, cudaMemcpyDeviceToDevice));

    std::lock_guard<std::mutex> lock(fft_mu_);
    const FftPlans& plans = fft_plans(n, R, a.dtype());
    if (a.dtype() == DType::f32) {
      DL_CUDA_CHECK(cufftExecR2C(plans.forward, (cufftReal*)pa.p, (cufftComplex*)fa.p));
      DL_CUDA_CHECK(cufftExecR2C(plans.forward, (cufftReal*)pb.p, (cufftComplex*)fb.p));
      cuda::launch_complex_mul(fa.p, fb.p, R * nc, 1.0 / (double)n, a.dtype());
      DL_CUDA_CHECK(cufftExecC2R(plans.inverse, (cufftComplex*)fa.p, (cufftReal*)pa.p));
    } else {
      DL_CUDA_CHECK(cufftExecD2Z(plans.forward, (cufftDoubleReal*)pa.p, (cufftDoubleComplex*)fa.p));
      DL_CUDA_CHECK(cufftExecD2Z(plans.forward, (cufftDoubleReal*)pb.p, (cufftDoubleComplex*)fb.p));
      cuda::launch_complex_mul(fa.p, fb.p, R * nc, 1.0 / (double)n, a.dtype());
      DL_CUDA_CHECK(cufftExecZ2D(plans.inverse, (cufftDoubleComplex*)fa.p, (cufftDoubleReal*)pa.p));
    }
    // keep the first L of each row of n
    DL_CUDA_CHECK(cudaMemcpy2DAsync(out.raw_data(), L * es, pa.p, n * es, L * es, R, cudaMemcpyDeviceToDevice));
    // The scratch blocks go back to the cache here while the copy may still run: safe, because the next
    // user of a block is queued behind it on the same stream.
  }

  void synchronize() override { DL_CUDA_CHECK(cudaDeviceSynchronize()); }

 private:
  struct FftPlans {
    cufftHandle forward = 0, inverse = 0;
  };

  cublasHandle_t blas_handle() {
    if (!blas_) DL_CUDA_CHECK(cublasCreate(&blas_));  // default math mode: true FP32, no TF32
    return blas_;
  }

  // Plans are cached per (n, batch, dtype): creating one costs far more than executing it. A run with
  // many distinct shapes would pile up plans (each holds a work area), so past kMaxPlans we start over.
  const FftPlans& fft_plans(int64_t n, int64_t batch, DType t) {
    constexpr size_t kMaxPlans = 32;
    auto key = std::make_tuple(n, batch, t);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    if (plans_.size() >= kMaxPlans) {
      for (auto& [k, p] : plans_) {
        cufftDestroy(p.forward);
        cufftDestroy(p.inverse);
      }
      plans_.clear();
    }
    // Basic layout (null embeds): `batch` rows of n reals <-> `batch` rows of n/2 + 1 complex numbers.
    FftPlans p;
    bool f32 = t == DType::f32;
    int len = (int)n;
    DL_CUDA_CHECK(cufftPlanMany(&p.forward, 1, &len, nullptr, 1, 0, nullptr, 1, 0, f32 ? CUFFT_R2C : CUFFT_D2Z, (int)batch));
    cufftResult r = cufftPlanMany(&p.inverse, 1, &len, nullptr, 1, 0, nullptr, 1, 0, f32 ? CUFFT_C2R : CUFFT_Z2D, (int)batch);
    if (r != CUFFT_SUCCESS) cufftDestroy(p.forward);
    DL_CUDA_CHECK(r);
    return plans_.emplace(key, p).first->second;
  }

  DeviceAllocator allocator_;
  mutable std::once_flag available_once_;
  mutable bool available_ = false;
  std::mutex blas_mu_, fft_mu_;
  cublasHandle_t blas_ = nullptr;
  std::map<std::tuple<int64_t, int64_t, DType>, FftPlans> plans_;
};

}  // namespace

Backend* device_backend(Device d) {
  if (d != Device::cuda) return nullptr;
  // Never destroyed: tensors may be freed during static destruction, after the CUDA runtime itself.
  static CudaBackend* backend = new CudaBackend();
  return backend;
}

}  // namespace dl
