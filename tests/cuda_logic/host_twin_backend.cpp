// tests/cuda_logic/host_twin_backend.cpp - the CUDA backend's host twin: Device::cuda tensors in host memory,
// every Backend method run through the same cuda/ops/ launch functions as the CUDA backend (cuda/backend.cuh),
// with thrust::cpp::par.
//
// Linked into test_cuda_logic, this file's device_backend() is found before libdl_cuda's (the linker takes an
// archive member only for a symbol still undefined), so in that binary a Device::cuda tensor is "on the device"
// for every dispatch in tensor/, autograd/, optim/ and nn/: the device branches, the optimizer's device state, a
// whole training step on the device, all run on a machine without a GPU (tests/cuda_logic/test_device_paths.cpp).
//
// The memory of a twin tensor sits behind a poisoned pointer (bit 62 flipped: not a valid x86-64 address), and
// each backend method first makes host views of its operands. So a CPU kernel that is handed a device tensor - a
// missing device branch - faults at once, and the SIGSEGV handler below says what that means, instead of
// silently computing on the twin's memory as a real GPU build never would.
// Like the CUDA backend it refuses a host operand and a strided view where that backend needs a contiguous one.
// What it is not: a test of the CUDA backend's other argument checks (cuda/checks.cuh), of nvcc, of cuBLAS/cuFFT (matmul and
// fft_conv here are the CPU's matmul and a direct sum), or of device memory. tests/cuda does that on a GPU.
#include <thrust/system/cpp/execution_policy.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/gather.cuh"
#include "cuda/ops/index.cuh"
#include "cuda/ops/nn.cuh"
#include "cuda/ops/optim.cuh"
#include "cuda/ops/reduce.cuh"
#include "tensor/allocator.h"
#include "tensor/backend.h"
#include "tensor/linalg.h"
#include "host_twin.h"

namespace dl {
namespace {

const auto& par = thrust::cpp::par;
constexpr uintptr_t kPoison = uintptr_t(1) << 62;

void* flip(const void* p) { return p ? (void*)((uintptr_t)p ^ kPoison) : nullptr; }

// A CPU tensor over the same bytes as device tensor t (shape, strides, offset kept); t's storage stays alive. Every
// operand handed to the backend must be on the device, as the CUDA backend requires: a host one is an error here too.
Tensor host_view(const Tensor& t) {
  if (!t.defined()) return t;
  if (t.device() != Device::cuda) fail("host twin: a " + std::string(device_name(t.device())) + " operand " + shape_str(t.shape()) +
                                       " was handed to the cuda backend");
  std::shared_ptr<Storage> keep = t.storage();
  Storage* s = new Storage(0, Device::cpu);
  host_free(s->data, 0);  // the one small block Storage took; ours points into the twin's memory instead
  s->data = flip(keep->data), s->nbytes = keep->nbytes;
  std::shared_ptr<Storage> alias(s, [keep](Storage* p) {
    p->data = nullptr;  // not ours to free: keep's destructor returns it to the twin
    delete p;
  });
  return Tensor(alias, t.shape(), t.strides(), t.offset(), t.dtype());
}
const auto& hv = host_view;
// The same for an operand the CUDA backend requires contiguous (require_cuda in cuda/checks.cuh): a view is an error here too.
Tensor hc(const Tensor& t) {
  if (t.defined() && !t.is_contiguous())
    fail("host twin: an operand " + shape_str(t.shape()) + " the cuda backend needs contiguous is a strided view");
  return host_view(t);
}

void on_segv(int) {
  const char msg[] =
      "\n*** SIGSEGV in test_cuda_logic: most likely a CPU kernel read a Device::cuda tensor of the host twin "
      "(tests/cuda_logic/host_twin_backend.cpp), i.e. an op reached by this test has no device branch.\n";
  ssize_t r = write(2, msg, sizeof msg - 1);
  (void)r;
  std::signal(SIGSEGV, SIG_DFL);
  std::raise(SIGSEGV);
}

class HostTwinBackend final : public Backend {
 public:
  HostTwinBackend() { std::signal(SIGSEGV, on_segv); }
  std::string name() const override { return "cuda"; }
  bool available() const override { return true; }
  std::string unavailable_reason() const override { return ""; }

  void* alloc(size_t n) override {
    allocations.fetch_add(1, std::memory_order_relaxed);
    return n ? flip(std::aligned_alloc(64, (n + 63) / 64 * 64)) : nullptr;
  }
  std::atomic<int64_t> allocations{0};  // host_twin_allocations(): did a run use the device at all?
  void free(void* p, size_t) override { std::free(flip(p)); }
  void copy_to_host(void* dst, const void* src, size_t n) override {
    if (n) std::memcpy(dst, flip(src), n);
  }
  void copy_from_host(void* dst, const void* src, size_t n) override {
    if (n) std::memcpy(flip(dst), src, n);
  }
  void copy_on_device(void* dst, const void* src, size_t n) override {
    if (n) std::memmove(flip(dst), flip(src), n);
  }
  void copy_strided(const Tensor& src, const Tensor& dst) override { ops::copy_strided(par, hv(src), hv(dst)); }
  void cast(const Tensor& src, const Tensor& dst) override { ops::cast(par, hv(src), hc(dst)); }
  void fill(const Tensor& out, double value) override {
    Tensor o = hc(out);
    dispatch_all(o.dtype(), "fill (twin)", [&]<class T>() { std::fill(o.data<T>(), o.data<T>() + o.numel(), (T)value); });
  }
  void unary(UnaryOp op, const Tensor& x, const Tensor& out) override { ops::unary(par, op, hv(x), hc(out)); }
  void unary_ext(ExtUnaryOp op, double alpha, const Tensor& x, const Tensor& out) override {
    ops::unary_ext(par, op, alpha, hv(x), hc(out));
  }
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override {
    ops::binary(par, ops::binary_code(op), hv(a), hv(b), hc(out));
  }
  void binary_ext(ExtBinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override {
    ops::binary(par, ops::binary_code(op), hv(a), hv(b), hc(out));
  }
  void where(const Tensor& c, const Tensor& a, const Tensor& b, const Tensor& out) override {
    ops::where(par, hv(c), hv(a), hv(b), hc(out));
  }
  void unary_backward(UnaryOp op, const Tensor& xy, const Tensor& dy, const Tensor& dx) override {
    ops::unary_backward(par, op, hv(xy), hv(dy), hc(dx));
  }
  void reduce(ReduceOp op, const Tensor& x, int64_t nkept, const Tensor& values, const Tensor& indices) override {
    ops::reduce(par, op, hv(x), nkept, hc(values), hc(indices));
  }
  void softmax(const Tensor& x, int64_t dim, bool log, const Tensor& y) override { ops::softmax(par, hv(x), dim, log, hc(y)); }
  void softmax_backward(const Tensor& y, const Tensor& dy, int64_t dim, bool log, const Tensor& dx) override {
    ops::softmax_backward(par, hv(y), hv(dy), dim, log, hc(dx));
  }
  void layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Tensor& y, const Tensor& mean,
                  const Tensor& rstd) override {
    ops::layer_norm(par, hv(x), hc(w), hc(b), eps, hc(y), hc(mean), hc(rstd));
  }
  void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& w,
                           const Tensor& dx, const Tensor& dw, const Tensor& db) override {
    ops::layer_norm_backward(par, hv(dy), hv(x), hc(mean), hc(rstd), hc(w), hc(dx), hc(dw), hc(db));
  }
  void cross_entropy(const Tensor& logits, const Tensor& target, int64_t ii, double ls, const Tensor& rowloss, const Tensor& lse,
                     const Tensor& valid) override {
    ops::cross_entropy(par, hv(logits), hc(target), ii, ls, hc(rowloss), hc(lse), hc(valid));
  }
  void cross_entropy_backward(const Tensor& logits, const Tensor& target, const Tensor& lse, int64_t ii, double ls,
                              const Tensor& row_scale, const Tensor& dx) override {
    ops::cross_entropy_backward(par, hv(logits), hc(target), hc(lse), ii, ls, hv(row_scale), hc(dx));
  }
  void embedding(const Tensor& w, const Tensor& idx, const Tensor& out) override { ops::embedding(par, hc(w), hc(idx), hc(out)); }
  void embedding_backward(const Tensor& dy, const Tensor& idx, const Tensor& dw) override {
    ops::embedding_backward(par, hc(dy), hc(idx), hc(dw));
  }
  void gather(const Tensor& x, int64_t d, const Tensor& idx, const Tensor& out) override { ops::gather(par, hv(x), d, hc(idx), hc(out)); }
  void scatter_add(const Tensor& out, int64_t d, const Tensor& idx, const Tensor& src) override {
    ops::scatter_add(par, hc(out), d, hc(idx), hv(src));
  }
  void index_add(const Tensor& out, int64_t d, const Tensor& idx, const Tensor& src) override {
    ops::index_add(par, hc(out), d, hc(idx), hc(src));
  }
  void one_hot(const Tensor& idx, const Tensor& out) override { ops::one_hot(par, hc(idx), hc(out)); }
  void cumsum(const Tensor& x, int64_t d, bool reverse, const Tensor& out) override { ops::cumsum(par, hc(x), d, reverse, hc(out)); }
  void dropout_mask(uint64_t base, double p, const Tensor& mask) override { ops::dropout_mask(par, base, p, hc(mask)); }
  void adam_step(const AdamScalars& s, const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v) override {
    ops::adam_step(par, s, hc(p), hc(g), hc(m), hc(v));
  }
  double sum_sq(const Tensor& g) override { return ops::sum_sq(par, hc(g)); }
  // The CPU's matmul on host views stands in for cuBLAS (a rank-2 operand shared by every batch, as there).
  void matmul(const Tensor& a, const Tensor& b, const Tensor& out) override {
    Tensor o = hc(out);
    o.copy_(dl::matmul(hc(a), hc(b)).reshape(o.shape()));
  }
  void sum_last(const Tensor& x, const Tensor& out) override { ops::reduce(par, ReduceOp::sum, hc(x), x.dim() - 1, hc(out), Tensor()); }
  void softmax_last(const Tensor& x, const Tensor& out) override { ops::softmax(par, hc(x), x.dim() - 1, false, hc(out)); }
  // out[r, t] = sum_{s <= t} a[r, s] b[r, t - s], directly (the definition cuFFT's product computes), in f64.
  void fft_conv(const Tensor& a, const Tensor& b, const Tensor& out) override {
    Tensor pa = hc(a), pb = hc(b), po = hc(out);
    int64_t L = a.size(-1), R = L ? a.numel() / L : 0;
    dispatch_float(a.dtype(), "fft_conv (twin)", [&]<class T>() {
      const T *x = pa.data<T>(), *k = pb.data<T>();
      T* y = po.data<T>();
      for (int64_t r = 0; r < R; r++)
        for (int64_t t = 0; t < L; t++) {
          double acc = 0;
          for (int64_t s = 0; s <= t; s++) acc += (double)x[r * L + s] * (double)k[r * L + t - s];
          y[r * L + t] = (T)acc;
        }
    });
  }
  void synchronize() override {}
};

HostTwinBackend& the_twin() {
  static HostTwinBackend* twin = new HostTwinBackend();  // never destroyed, as the real one
  return *twin;
}

}  // namespace

Backend* device_backend(Device d) {
  if (d != Device::cuda) return nullptr;
  return &the_twin();
}

int64_t host_twin_allocations() { return the_twin().allocations.load(); }

}  // namespace dl
