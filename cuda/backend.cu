// cuda/backend.cu - the CUDA implementation of dl::Backend (tensor/backend.h): device memory, copies,
// cuBLAS matmul, cuFFT convolution, argument checks, and the dispatch to the hand-written kernels in
// cuda/kernels.cu and the Thrust-based ops of cuda/ops/ (cuda/device_ops.h).
//
// Memory: a caching allocator with size-class bins (the same rounding idea as tensor/allocator.cpp).
// cudaMalloc runs only on a miss and synchronises the device, so a training step that frees and
// re-allocates its activations must find them in the cache; freed blocks are kept until process exit
// (or until a cudaMalloc fails, when the cache is released and the call retried once). Plain cudaMalloc,
// never managed memory.
// Streams: everything runs on the legacy default stream, so work is ordered and a block freed by one op
// can be handed to the next op at once. Adding streams would require the allocator to record an event
// per block; that is deliberately not done yet.
// What it is not: multi-GPU (the current device, normally 0, is used).
#include <cublas_v2.h>
#include <cufft.h>

#include <climits>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "cuda/check.cuh"
#include "cuda/device_ops.h"
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

// On this device, any strides.
void require_on_cuda(const Tensor& t, const char* op, const char* what) {
  if (!t.defined()) fail(std::string(op) + " (cuda): " + what + " is undefined");
  if (t.device() != Device::cuda) fail(std::string(op) + " (cuda): " + what + " is on " + device_name(t.device()));
}

// On this device and contiguous.
void require_cuda(const Tensor& t, const char* op, const char* what) {
  require_on_cuda(t, op, what);
  if (!t.is_contiguous()) fail(std::string(op) + " (cuda): " + what + " " + shape_str(t.shape()) + " must be contiguous");
}

// An input view read with out's shape and dtype (elementwise ops).
void require_input(const Tensor& x, const Tensor& out, const char* op, const char* what) {
  require_on_cuda(x, op, what);
  if (x.shape() != out.shape())
    fail(std::string(op) + " (cuda): " + what + " " + shape_str(x.shape()) + " must have the output's shape " + shape_str(out.shape()));
  if (x.dtype() != out.dtype())
    fail(std::string(op) + " (cuda): " + what + " is " + dtype_name(x.dtype()) + ", the output " + dtype_name(out.dtype()));
}

void require_same(const Tensor& a, const Tensor& b, const char* op, const char* wa, const char* wb) {
  if (a.numel() != b.numel())
    fail(std::string(op) + " (cuda): " + wa + " " + shape_str(a.shape()) + " and " + wb + " " + shape_str(b.shape()) +
         " differ in size");
  if (a.dtype() != b.dtype())
    fail(std::string(op) + " (cuda): " + wa + " is " + dtype_name(a.dtype()) + ", " + wb + " is " + dtype_name(b.dtype()));
}

// One value per row of x (every dim but the last), contiguous, x's dtype.
void require_rows(const Tensor& x, const Tensor& r, const char* op, const char* what) {
  require_cuda(r, op, what);
  int64_t C = x.dim() == 0 ? 1 : x.size(-1), R = C == 0 ? r.numel() : x.numel() / C;
  if (r.numel() != R || r.dtype() != x.dtype())
    fail(std::string(op) + " (cuda): " + what + " needs " + std::to_string(R) + " elements of " + dtype_name(x.dtype()) + ", got " +
         shape_str(r.shape()) + " " + dtype_name(r.dtype()));
}

// A [C] parameter of x's last dim, contiguous, x's dtype.
void require_channels(const Tensor& x, const Tensor& p, const char* op, const char* what) {
  require_cuda(p, op, what);
  if (x.dim() < 1 || p.shape() != Shape{x.size(-1)} || p.dtype() != x.dtype())
    fail(std::string(op) + " (cuda): " + what + " " + shape_str(p.shape()) + " " + dtype_name(p.dtype()) + " must be [C] of the input " +
         shape_str(x.shape()) + " " + dtype_name(x.dtype()));
}

// Class indices: contiguous i64, one per row of logits (..., C).
void require_target(const Tensor& logits, const Tensor& t, const char* op) {
  require_cuda(t, op, "target");
  Shape want(logits.shape().begin(), logits.shape().end() - (logits.dim() ? 1 : 0));
  if (t.shape() != want || t.dtype() != DType::i64)
    fail(std::string(op) + " (cuda): target " + shape_str(t.shape()) + " " + dtype_name(t.dtype()) + " must be i64 " + shape_str(want));
}

// An index for gather / scatter_add: contiguous i64 of the operand's rank, d a dim of it.
void require_index(const Tensor& idx, const char* op, int64_t rank, int64_t d) {
  require_cuda(idx, op, "index");
  if (idx.dtype() != DType::i64 || idx.dim() != rank || d < 0 || d >= rank)
    fail(std::string(op) + " (cuda): index " + shape_str(idx.shape()) + " " + dtype_name(idx.dtype()) + " must be i64 of rank " +
         std::to_string(rank) + ", dim " + std::to_string(d));
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
      if (e != cudaSuccess) reason_ = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
      else if (n < 1) reason_ = "cudaGetDeviceCount: 0 devices";
    });
    return available_;
  }
  std::string unavailable_reason() const override {
    available();
    return reason_;
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

  // Views in, contiguous out: the Thrust ops of cuda/ops/ read any strides (cuda/device_ops.h).
  void copy_strided(const Tensor& src, const Tensor& dst) override {
    require_on_cuda(dst, "copy_", "dst");
    require_input(src, dst, "copy_", "src");
    cuda::copy_strided(src, dst);
  }

  void cast(const Tensor& src, const Tensor& dst) override {
    require_cuda(dst, "to(dtype)", "dst");
    require_on_cuda(src, "to(dtype)", "src");
    if (src.shape() != dst.shape())
      fail("to(dtype) (cuda): src " + shape_str(src.shape()) + " and dst " + shape_str(dst.shape()) + " differ in shape");
    cuda::cast(src, dst);
  }

  void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) override {
    require_cuda(out, "where", "out");
    require_input(a, out, "where", "a");
    require_input(b, out, "where", "b");
    require_on_cuda(cond, "where", "cond");
    if (cond.shape() != out.shape())
      fail("where (cuda): cond " + shape_str(cond.shape()) + " must have the output's shape " + shape_str(out.shape()));
    cuda::where(cond, a, b, out);
  }

  void unary(UnaryOp op, const Tensor& x, const Tensor& out) override {
    require_cuda(out, "unary", "out");
    require_input(x, out, "unary", "x");
    require_float(x, "unary");
    cuda::unary(op, x, out);
  }

  void unary_ext(ExtUnaryOp op, double alpha, const Tensor& x, const Tensor& out) override {
    require_cuda(out, "unary_ext", "out");
    require_input(x, out, "unary_ext", "x");
    if (op != ExtUnaryOp::sign) require_float(x, "unary_ext");
    cuda::unary_ext(op, alpha, x, out);
  }

  void unary_backward(UnaryOp op, const Tensor& xy, const Tensor& dy, const Tensor& dx) override {
    require_cuda(dx, "unary_backward", "dx");
    require_input(xy, dx, "unary_backward", unary_backward_uses_y(op) ? "y" : "x");
    require_input(dy, dx, "unary_backward", "dy");
    require_float(dx, "unary_backward");
    cuda::unary_backward(op, xy, dy, dx);
  }

  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override {
    require_cuda(out, "binary", "out");
    require_input(a, out, "binary", "a");
    require_input(b, out, "binary", "b");
    cuda::binary(op, a, b, out);
  }

  void binary_ext(ExtBinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override {
    require_cuda(out, "binary", "out");
    require_input(a, out, "binary", "a");
    require_input(b, out, "binary", "b");
    cuda::binary_ext(op, a, b, out);
  }

  // ---- reductions over any dims (cuda/ops/reduce.cuh) ----
  void reduce(ReduceOp op, const Tensor& x, int64_t nkept, const Tensor& values, const Tensor& indices) override {
    require_on_cuda(x, "reduce", "x");
    require_cuda(values, "reduce", "values");
    require_float(x, "reduce");
    int64_t kept = 1;
    for (int64_t d = 0; d < nkept; d++) kept *= x.size(d);
    if (nkept < 0 || nkept > x.dim() || values.numel() != kept || values.dtype() != x.dtype())
      fail("reduce (cuda): x " + shape_str(x.shape()) + " keeping " + std::to_string(nkept) + " dims needs values of " +
           std::to_string(kept) + " elements of " + dtype_name(x.dtype()) + ", got " + shape_str(values.shape()));
    if (indices.defined()) {
      require_cuda(indices, "reduce", "indices");
      if (indices.numel() != kept || indices.dtype() != DType::i64)
        fail("reduce (cuda): indices must be i64 with " + std::to_string(kept) + " elements");
    }
    if (op == ReduceOp::sum && nkept == x.dim() - 1 && x.is_contiguous() && x.size(-1) > 0)  // rows: the block-per-row CUB kernel
      return cuda::launch_sum_last(x.raw_data(), values.raw_data(), kept, x.size(-1), x.dtype());
    cuda::reduce(op, x, nkept, values, indices);
  }

  // ---- row ops (cuda/ops/nn.cuh): inputs any views, outputs contiguous ----
  void softmax(const Tensor& x, int64_t dim, bool log, const Tensor& y) override {
    require_cuda(y, "softmax", "y");
    require_input(x, y, "softmax", "x");
    require_float(x, "softmax");
    if (!log && x.dim() >= 1 && dim == x.dim() - 1 && x.is_contiguous()) {  // rows of C: the block-per-row CUB kernel
      int64_t C = x.size(-1);
      if (C > 0) cuda::launch_softmax_last(x.raw_data(), y.raw_data(), x.numel() / C, C, x.dtype());
      return;
    }
    cuda::softmax(x, dim, log, y);
  }

  void softmax_backward(const Tensor& y, const Tensor& dy, int64_t dim, bool log, const Tensor& dx) override {
    require_cuda(dx, "softmax backward", "dx");
    require_input(y, dx, "softmax backward", "y");
    require_input(dy, dx, "softmax backward", "dy");
    require_float(dx, "softmax backward");
    cuda::softmax_backward(y, dy, dim, log, dx);
  }

  void layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Tensor& y, const Tensor& mean,
                  const Tensor& rstd) override {
    const char* op = "layer_norm";
    require_cuda(y, op, "y");
    require_input(x, y, op, "x");
    require_float(x, op);
    require_rows(x, rstd, op, "rstd");
    if (mean.defined()) require_rows(x, mean, op, "mean");
    if (w.defined()) require_channels(x, w, op, "weight");
    if (b.defined()) require_channels(x, b, op, "bias");
    cuda::layer_norm(x, w, b, eps, y, mean, rstd);
  }

  void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& w,
                           const Tensor& dx, const Tensor& dw, const Tensor& db) override {
    const char* op = "layer_norm backward";
    require_on_cuda(x, op, "x");
    require_input(dy, x, op, "dy");
    require_float(x, op);
    require_rows(x, rstd, op, "rstd");
    if (mean.defined()) require_rows(x, mean, op, "mean");
    if (w.defined()) require_channels(x, w, op, "weight");
    if (dx.defined()) {
      require_cuda(dx, op, "dx");
      require_same(x, dx, op, "x", "dx");
    }
    if (dw.defined()) require_channels(x, dw, op, "dweight");
    if (db.defined()) require_channels(x, db, op, "dbias");
    cuda::layer_norm_backward(dy, x, mean, rstd, w, dx, dw, db);
  }

  void cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index, double ls, const Tensor& rowloss,
                     const Tensor& lse, const Tensor& valid) override {
    const char* op = "cross_entropy";
    require_on_cuda(logits, op, "logits");
    require_float(logits, op);
    require_target(logits, target, op);
    require_rows(logits, rowloss, op, "rowloss");
    require_rows(logits, lse, op, "lse");
    require_rows(logits, valid, op, "valid");
    cuda::cross_entropy(logits, target, ignore_index, ls, rowloss, lse, valid);
  }

  void cross_entropy_backward(const Tensor& logits, const Tensor& target, const Tensor& lse, int64_t ignore_index, double ls,
                              const Tensor& row_scale, const Tensor& dx) override {
    const char* op = "cross_entropy backward";
    require_on_cuda(logits, op, "logits");
    require_float(logits, op);
    require_target(logits, target, op);
    require_rows(logits, lse, op, "lse");
    require_on_cuda(row_scale, op, "row_scale");
    if (row_scale.shape() != target.shape() || row_scale.dtype() != logits.dtype())
      fail("cross_entropy backward (cuda): row_scale " + shape_str(row_scale.shape()) + " must have the target's shape " +
           shape_str(target.shape()) + " and the logits' dtype");
    require_cuda(dx, op, "dx");
    require_same(logits, dx, op, "logits", "dx");
    cuda::cross_entropy_backward(logits, target, lse, ignore_index, ls, row_scale, dx);
  }

  // ---- indexing, dropout, optimizer (cuda/ops/index.cuh, optim.cuh) ----
  void embedding(const Tensor& weight, const Tensor& idx, const Tensor& out) override {
    require_cuda(weight, "embedding", "weight");
    require_cuda(idx, "embedding", "idx");
    require_cuda(out, "embedding", "out");
    require_float(weight, "embedding");
    if (weight.dim() != 2 || idx.dtype() != DType::i64 || out.dtype() != weight.dtype() ||
        out.numel() != idx.numel() * weight.size(1))
      fail("embedding (cuda): weight " + shape_str(weight.shape()) + " (V, D), i64 idx " + shape_str(idx.shape()) +
           " and out " + shape_str(out.shape()) + " (N, D) do not fit");
    cuda::embedding(weight, idx, out);
  }

  void embedding_backward(const Tensor& dy, const Tensor& idx, const Tensor& dw) override {
    require_cuda(dy, "embedding_backward", "dy");
    require_cuda(idx, "embedding_backward", "idx");
    require_cuda(dw, "embedding_backward", "dw");
    require_float(dw, "embedding_backward");
    if (dw.dim() != 2 || idx.dtype() != DType::i64 || dy.dtype() != dw.dtype() || dy.numel() != idx.numel() * dw.size(1))
      fail("embedding_backward (cuda): dy " + shape_str(dy.shape()) + " (N, D), i64 idx " + shape_str(idx.shape()) +
           " and dw " + shape_str(dw.shape()) + " (V, D) do not fit");
    cuda::embedding_backward(dy, idx, dw);
  }

  // gather / scatter_add / index_add / one_hot (cuda/ops/gather.cuh); shapes and index ranges checked by tensor/
  void gather(const Tensor& x, int64_t d, const Tensor& idx, const Tensor& out) override {
    require_on_cuda(x, "gather", "x");
    require_index(idx, "gather", x.dim(), d);
    require_cuda(out, "gather", "out");
    if (out.shape() != idx.shape() || out.dtype() != x.dtype())
      fail("gather (cuda): out " + shape_str(out.shape()) + " must have the index's shape " + shape_str(idx.shape()) + " and x's dtype");
    cuda::gather(x, d, idx, out);
  }

  void scatter_add(const Tensor& out, int64_t d, const Tensor& idx, const Tensor& src) override {
    require_cuda(out, "scatter_add", "out");
    require_index(idx, "scatter_add", out.dim(), d);
    require_on_cuda(src, "scatter_add", "src");
    if (src.dtype() != out.dtype() || src.dim() != idx.dim())
      fail("scatter_add (cuda): src " + shape_str(src.shape()) + " " + dtype_name(src.dtype()) + " does not fit out " +
           shape_str(out.shape()) + " " + dtype_name(out.dtype()));
    cuda::scatter_add(out, d, idx, src);
  }

  void index_add(const Tensor& out, int64_t d, const Tensor& idx, const Tensor& src) override {
    require_cuda(out, "index_add", "out");
    require_cuda(idx, "index_add", "index");
    require_cuda(src, "index_add", "src");
    if (idx.dtype() != DType::i64 || idx.dim() > 1 || d < 0 || d >= out.dim() || src.dtype() != out.dtype() ||
        src.numel() != (out.size(d) ? out.numel() / out.size(d) : 0) * idx.numel())
      fail("index_add (cuda): out " + shape_str(out.shape()) + ", 1-D i64 index " + shape_str(idx.shape()) + " and src " +
           shape_str(src.shape()) + " do not fit along dim " + std::to_string(d));
    cuda::index_add(out, d, idx, src);
  }

  void one_hot(const Tensor& idx, const Tensor& out) override {
    require_cuda(idx, "one_hot", "index");
    require_cuda(out, "one_hot", "out");
    if (idx.dtype() != DType::i64 || out.dim() != idx.dim() + 1 || out.numel() != idx.numel() * out.size(-1))
      fail("one_hot (cuda): out " + shape_str(out.shape()) + " must be the i64 index " + shape_str(idx.shape()) + " + [C]");
    cuda::one_hot(idx, out);
  }

  void cumsum(const Tensor& x, int64_t d, bool reverse, const Tensor& out) override {
    require_cuda(x, "cumsum", "x");
    require_cuda(out, "cumsum", "out");
    require_same(x, out, "cumsum", "x", "out");
    if (x.dim() > 0 && (d < 0 || d >= x.dim())) fail("cumsum (cuda): dim " + std::to_string(d) + " out of range");
    cuda::cumsum(x, d, reverse, out);
  }

  void dropout_mask(uint64_t base, double p, const Tensor& mask) override {
    require_cuda(mask, "dropout", "mask");
    require_float(mask, "dropout");
    if (!(p >= 0.0 && p <= 1.0)) fail("dropout (cuda): p must be in [0, 1], got " + std::to_string(p));
    cuda::dropout_mask(base, p, mask);
  }

  void adam_step(const AdamScalars& s, const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v) override {
    const char* op = "adam_step";
    require_cuda(param, op, "param");
    require_cuda(grad, op, "grad");
    require_cuda(m, op, "exp_avg");
    require_cuda(v, op, "exp_avg_sq");
    require_float(param, op);
    require_same(param, grad, op, "param", "grad");
    require_same(param, m, op, "param", "exp_avg");
    require_same(param, v, op, "param", "exp_avg_sq");
    cuda::adam_step(s, param, grad, m, v);
  }

  double sum_sq(const Tensor& g) override {
    require_cuda(g, "sum_sq", "g");
    require_float(g, "sum_sq");
    return cuda::sum_sq(g);
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
      DL_CUDA_CHECK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, (const float*)b.raw_data(), m, sb,
                                              (const float*)a.raw_data(), k, sa, &zero, (float*)out.raw_data(), m, sc, batch));
    } else {
      const double one = 1, zero = 0;
      DL_CUDA_CHECK(cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, (const double*)b.raw_data(), m, sb,
                                              (const double*)a.raw_data(), k, sa, &zero, (double*)out.raw_data(), m, sc, batch));
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
  mutable std::string reason_;
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
