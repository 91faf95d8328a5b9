// tensor/backend.h - the one device seam.
//
// Every op in tensor/ops.h runs its CPU kernel for CPU tensors; for a tensor on another device it asks
// device_backend(device) and calls the same-named method there. Which backend is the device is registered in one
// place (tensor/tensor.cpp): by default Device::cuda is the build's own, cuda_backend() - the GPU (cuda/gpu.cu), or
// nullptr in a build without nvcc (cuda/backend_stub.cpp), so that a CUDA tensor fails with "built without CUDA".
// A program may register another explicitly, before its first device tensor: the tests make the host twin of the
// CUDA backend the device (cuda/twin.h), so that every device branch runs on a machine without a GPU. No #ifdef
// anywhere else.
// What it is not: a full second implementation of every op. Ops a backend lacks throw, naming the op.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/optim_kernels.h"  // AdamScalars
#include "tensor/tensor.h"

namespace dl {

enum class UnaryOp { neg, exp, log, sqrt, rsqrt, abs, tanh, sigmoid, relu, gelu_erf, gelu_tanh, silu, softplus };
enum class BinaryOp { add, sub, mul, div };  // the differentiable four (autograd/elementwise.cpp)
// The rest of tensor/elementwise.h's binary family; comparisons give 0/1 in the inputs' dtype.
enum class ExtBinaryOp { pow, maximum, minimum, eq, ne, lt, le, gt, ge };
// Reductions over dims; max/min also give the index of the first extreme (argmax/argmin).
// var / var_unbiased: the two-pass variance of tensor/reduce.cpp (mean, then squared deviations, f64), / R or R - 1.
enum class ReduceOp { sum, mean, max, min, logsumexp, var, var_unbiased };
// Unary ops outside the differentiable UnaryOp family (tensor/elementwise.cpp writes them with unary_map):
// sin, cos, sign (-1, 0, 1; any dtype), elu (x > 0 ? x : alpha expm1(x)).
enum class ExtUnaryOp { sin, cos, sign, elu };

// The derivative of these unary ops is cheapest from y = op(x); the others' from x
// (tensor/elementwise.cpp's unary_backward, which the device version follows).
inline bool unary_backward_uses_y(UnaryOp op) {
  return op == UnaryOp::exp || op == UnaryOp::sqrt || op == UnaryOp::rsqrt || op == UnaryOp::tanh || op == UnaryOp::sigmoid;
}

// The scalars of the attention primitive (nn/fused/flash_attention.h): heads, causal, and its dropout on the weights,
// keep(b, h, t, s) = row_draw(row_key(seed, (b NH + h) T + t), s) >= thr (tensor/nn_kernels.h), kept weights times r.
struct AttentionArgs {
  int64_t heads = 1;
  int64_t window = 0;  // > 0: row t sees only the keys |t - s| <= window (the band)
  bool causal = false, dropout = false;
  uint64_t seed = 0, thr = 0;
  float r = 1;
};

struct Backend {
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual bool available() const = 0;  // a device is present
  // Why available() is false, in the driver's words ("cudaGetDeviceCount: no CUDA-capable device is detected");
  // empty when a device is present.
  virtual std::string unavailable_reason() const = 0;
  // memory
  virtual void* alloc(size_t nbytes) = 0;
  virtual void free(void* p, size_t nbytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, size_t nbytes) = 0;
  virtual void copy_from_host(void* dst, const void* src, size_t nbytes) = 0;
  virtual void copy_on_device(void* dst, const void* src, size_t nbytes) = 0;
  // dst[...] = src[...]: equal shapes and dtypes, both any view (src may be expanded: stride 0)
  virtual void copy_strided(const Tensor& src, const Tensor& dst) = 0;
  // dst = src converted to dst's dtype (to(dtype)): src any view of dst's shape, dst contiguous
  virtual void cast(const Tensor& src, const Tensor& dst) = 0;
  // Elementwise: out is contiguous; inputs are any views with out's shape (broadcast operands expanded).
  virtual void fill(const Tensor& out, double value) = 0;  // out contiguous
  virtual void unary(UnaryOp op, const Tensor& x, const Tensor& out) = 0;
  virtual void unary_ext(ExtUnaryOp op, double alpha, const Tensor& x, const Tensor& out) = 0;  // alpha: elu's
  virtual void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  virtual void binary_ext(ExtBinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  // out = cond != 0 ? a : b (cond any dtype, compared in a's as the CPU does)
  virtual void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  // dx = op'(x) dy; xy is y = op(x) when unary_backward_uses_y(op), else x
  virtual void unary_backward(UnaryOp op, const Tensor& xy, const Tensor& dy, const Tensor& dx) = 0;
  // x: a view whose first nkept dims are kept and the rest reduced; values (x's dtype) and indices (i64,
  // max/min only, may be undefined) are contiguous with one element per kept position
  virtual void reduce(ReduceOp op, const Tensor& x, int64_t nkept, const Tensor& values, const Tensor& indices) = 0;
  // Row ops (C: the dim they run along; inputs any views, outputs contiguous in the input's shape).
  // softmax (log = log_softmax) over dim (wrapped); dx = y (dy - sum(dy y)) or dy - exp(y) sum(dy)
  virtual void softmax(const Tensor& x, int64_t dim, bool log, const Tensor& y) = 0;
  virtual void softmax_backward(const Tensor& y, const Tensor& dy, int64_t dim, bool log, const Tensor& dx) = 0;
  // layer_norm over the last dim; rms_norm when mean is undefined. w, b: [C] or undefined.
  virtual void layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Tensor& y, const Tensor& mean,
                          const Tensor& rstd) = 0;
  // dx, dw, db: each undefined when not asked for; mean undefined for rms_norm
  virtual void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& w,
                                   const Tensor& dx, const Tensor& dw, const Tensor& db) = 0;
  // per row of logits (..., C): lse, loss (0 if ignored) and valid (1 counted, 0 ignored, NaN: target out of range)
  virtual void cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index, double label_smoothing,
                             const Tensor& rowloss, const Tensor& lse, const Tensor& valid) = 0;
  // dx = g (softmax - q) per row, g = row_scale (a view with the target's shape), 0 on ignored rows
  virtual void cross_entropy_backward(const Tensor& logits, const Tensor& target, const Tensor& lse, int64_t ignore_index,
                                      double label_smoothing, const Tensor& row_scale, const Tensor& dx) = 0;
  // Indexing (contiguous): out(N, D) = weight(V, D)[idx(N)]; dw(V, D) = sum of dy(N, D) rows per index
  // (deterministic: sorted, segmented, in index order). Indices are checked by the caller.
  virtual void embedding(const Tensor& weight, const Tensor& idx, const Tensor& out) = 0;
  virtual void embedding_backward(const Tensor& dy, const Tensor& idx, const Tensor& dw) = 0;
  // gather / scatter_add / index_add along dim d (tensor/indexing.h's meaning); idx contiguous i64, checked by the
  // caller. gather: out (idx's shape, contiguous) = x[.., idx, ..] for x any view. scatter_add: out contiguous,
  // src any view, out[.., idx, ..] += src. index_add: out contiguous, 1-D idx, src contiguous with out's shape but
  // idx.numel() along d. Each output element is summed by one thread in the CPU's order (deterministic).
  virtual void gather(const Tensor& x, int64_t d, const Tensor& idx, const Tensor& out) = 0;
  virtual void scatter_add(const Tensor& out, int64_t d, const Tensor& idx, const Tensor& src) = 0;
  virtual void index_add(const Tensor& out, int64_t d, const Tensor& idx, const Tensor& src) = 0;
  // out (idx's shape + [C], contiguous, any dtype) = 1 where c == idx[r], else 0; idx contiguous, checked in [0, C)
  virtual void one_hot(const Tensor& idx, const Tensor& out) = 0;
  // out = inclusive running sum of x along d (from the end when reverse); x and out contiguous, one shape
  virtual void cumsum(const Tensor& x, int64_t d, bool reverse, const Tensor& out) = 0;
  // the dropout mask of tensor/nn_kernels.h for the base draw `base` (the one u64 taken from the Generator)
  virtual void dropout_mask(uint64_t base, double p, const Tensor& mask) = 0;
  // Optimizer (contiguous, one shape): one fused Adam/AdamW update of param, m, v in place; sum of g^2 in f64
  virtual void adam_step(const AdamScalars& s, const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v) = 0;
  virtual double sum_sq(const Tensor& g) = 0;
  // The same over many tensors at once (one launch, one read back): each list entry is one parameter as above, all of
  // one dtype; sum_sq_all is the sum over every tensor of g (the squared global 2-norm), in f64.
  virtual void adam_steps(const AdamScalars& s, const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                          const std::vector<Tensor>& m, const std::vector<Tensor>& v) = 0;
  virtual double sum_sq_all(const std::vector<Tensor>& gs) = 0;
  // out(B, M, N) = a(B, M, K) @ b(B, K, N), contiguous f32 (cuBLAS strided-batched sgemm)
  virtual void matmul(const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  // sum over the last dim: x(R, C) -> out(R)
  virtual void sum_last(const Tensor& x, const Tensor& out) = 0;
  // softmax over the last dim: x(R, C) -> out(R, C)
  virtual void softmax_last(const Tensor& x, const Tensor& out) = 0;
  // out = irfft(rfft(a, n) * rfft(b, n), n)[:L] per row: a(R, L), b(R, L), out(R, L) (cuFFT)
  virtual void fft_conv(const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  // Real FFTs of rows, unnormalised (cuFFT's R2C and C2R; tensor/fft.cpp pads, truncates and scales around them):
  // x (R, n) -> X (R, n/2 + 1, 2) (re, im); X -> x, X read as half of a Hermitian spectrum and overwritten. Contiguous.
  virtual void rfft_rows(const Tensor& x, const Tensor& X) = 0;
  virtual void irfft_rows(const Tensor& X, const Tensor& x) = 0;
  // The Vandermonde product of diagonal state-space kernels (S4D, DLR; nn/ssm/ssm_ops.h), all contiguous f64 with complex
  // numbers as (re, im): K (Cc, H, L) = scale Re sum_n Ct (Cc, H, N) exp(E (H, N) l); backward g_Ct = scale sum_l dK
  // conj(V), g_E = scale sum_c conj(Ct) sum_l dK l conj(V), V = exp(E l); g_Ct / g_E undefined when not asked for.
  virtual void vandermonde(const Tensor& Ct, const Tensor& E, double scale, const Tensor& K) = 0;
  virtual void vandermonde_backward(const Tensor& Ct, const Tensor& E, const Tensor& dK, double scale, const Tensor& gCt,
                                    const Tensor& gE) = 0;
  // Self-attention on the packed projection, float32 (nn/fused/flash_attention.h's map, computed without any T x T
  // matrix): qkv (B, T, 3C) contiguous; key_mask (B, T) f32 or undefined; prefix (B) i64 or undefined; out (B, T, C);
  // L (B, NH, T) the rows' log-sum-exp. The backward takes the forward's out and L and writes dqkv (B, T, 3C).
  virtual void attention(const AttentionArgs& a, const Tensor& qkv, const Tensor& key_mask, const Tensor& prefix,
                         const Tensor& out, const Tensor& L) = 0;
  virtual void attention_backward(const AttentionArgs& a, const Tensor& qkv, const Tensor& key_mask, const Tensor& prefix,
                                  const Tensor& out, const Tensor& L, const Tensor& dout, const Tensor& dqkv) = 0;
  // S4's DPLR kernel spectrum (nn/ssm/s4.cpp, float64, complex as (re, im)) at the M = Lk/2 + 1 nodes z = e^(-2 pi i m/Lk):
  // w (H, N2) = dt Lambda, dt (H), V (2 Cc + 2, H, N2) the pairs' products [Ct B | Ct P | Q B | Q P];
  // Khat (Cc, H, M) = 2 [s00 - al s01 s10 / (1 + al s11)], s_pair = dt sum_n [v/den + conj(v)/den'] (see s4.cpp).
  // Backward from gKhat (Cc, H, M): gV (2 Cc + 2, H, N2), gw (H, N2), gdt (H) (the Cauchy sums' share of dt's gradient).
  virtual void dplr_spectrum(const Tensor& w, const Tensor& dt, const Tensor& V, int64_t Lk, const Tensor& Khat) = 0;
  virtual void dplr_spectrum_backward(const Tensor& w, const Tensor& dt, const Tensor& V, int64_t Lk, const Tensor& gKhat,
                                      const Tensor& gV, const Tensor& gw, const Tensor& gdt) = 0;
  // One LSTM step's pointwise part (nn/fused/lstm_kernels.h; formulas nn/recurrent/lstm.h): gates (B, 4 Hd) the i, f,
  // g, o pre-activations and c (B, Hd) -> hc (B, 2, Hd) = [h_t, c_t]; backward from dhc (B, 2, Hd) with the activations
  // recomputed: dgates (B, 4 Hd), dc (B, Hd). All contiguous, one float dtype.
  virtual void lstm_cell(const Tensor& gates, const Tensor& c, const Tensor& hc) = 0;
  virtual void lstm_cell_backward(const Tensor& gates, const Tensor& c, const Tensor& dhc, const Tensor& dgates,
                                  const Tensor& dc) = 0;
  virtual void synchronize() = 0;
};

Backend* device_backend(Device d);                   // the device's registered backend; nullptr when there is none
Backend& require_backend(Device d, const char* op);  // throws naming op when missing or no device
// Make b the backend of device d (only Device::cuda has one) for every allocation and op from now on. Storage
// remembers the backend that allocated it, so a block is always freed where it came from.
void set_device_backend(Device d, Backend* b);
Backend* cuda_backend();  // the build's own: the GPU (cuda/gpu.cu) or nullptr (cuda/backend_stub.cpp)

// Checks of device data that would cost a read back (a synchronisation) per op - an index that lives on the device
// (tensor/indexing.cpp) - are deferred to the next read back: `count` (a device f64 scalar) counts the violations,
// and the next Tensor::to(Device::cpu) (item(), a metric, a checkpoint) reads every pending count and fails with
// `message` and the count if one is not zero. The op itself ran on data made safe (clamped indices).
void defer_device_check(Tensor count, std::string message);
void flush_device_checks();  // read the pending counts now (Tensor::to(Device::cpu) does); throws on the first bad one

}  // namespace dl
