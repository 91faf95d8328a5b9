// cuda/backend_nn.cuh - the row ops of neural networks in CudaBackend<P> (cuda/backend.h), forward and backward:
// softmax / log_softmax over any dim (contiguous last-dim rows: the block-per-row kernel), layer_norm / rms_norm,
// cross-entropy with ignore_index and label smoothing (cuda/ops/nn.cuh), and the dropout mask (the CPU's
// counter-based draws, cuda/ops/index.cuh), and one LSTM step's pointwise part (cuda/ops/lstm.cuh).
#pragma once
#include "cuda/backend.h"
#include "cuda/checks.h"
#include "cuda/ops/index.cuh"
#include "cuda/ops/lstm.cuh"
#include "cuda/ops/nn.cuh"

namespace dl::cuda {

template <class P> void CudaBackend<P>::softmax(const Tensor& x, int64_t dim, bool log, const Tensor& y) {
  require_cuda(y, "softmax", "y");
  require_input(x, y, "softmax", "x");
  require_float(x, "softmax");
  if (!log && x.dim() >= 1 && dim == x.dim() - 1 && x.is_contiguous()) {  // rows of C: the block-per-row CUB kernel
    int64_t C = x.size(-1);
    if (C > 0) p_.softmax_last(x.raw_data(), y.raw_data(), x.numel() / C, C, x.dtype());
    return;
  }
  ops::softmax(p_.par(), p_.view(x), dim, log, p_.view(y));
}

template <class P>
void CudaBackend<P>::softmax_backward(const Tensor& y, const Tensor& dy, int64_t dim, bool log, const Tensor& dx) {
  require_cuda(dx, "softmax backward", "dx");
  require_input(y, dx, "softmax backward", "y");
  require_input(dy, dx, "softmax backward", "dy");
  require_float(dx, "softmax backward");
  ops::softmax_backward(p_.par(), p_.view(y), p_.view(dy), dim, log, p_.view(dx));
}

template <class P> void CudaBackend<P>::softmax_last(const Tensor& x, const Tensor& out) {
  require_cuda(x, "softmax_last", "x");
  require_cuda(out, "softmax_last", "out");
  require_same(x, out, "softmax_last", "x", "out");
  require_float(x, "softmax_last");
  int64_t C = x.dim() == 0 ? 1 : x.size(-1);
  if (C == 0) return;
  p_.softmax_last(x.raw_data(), out.raw_data(), x.numel() / C, C, x.dtype());
}

template <class P>
void CudaBackend<P>::layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Tensor& y,
                                const Tensor& mean, const Tensor& rstd) {
  const char* op = "layer_norm";
  require_cuda(y, op, "y");
  require_input(x, y, op, "x");
  require_float(x, op);
  require_rows(x, rstd, op, "rstd");
  if (mean.defined()) require_rows(x, mean, op, "mean");
  if (w.defined()) require_channels(x, w, op, "weight");
  if (b.defined()) require_channels(x, b, op, "bias");
  ops::layer_norm(p_.par(), p_.view(x), p_.view(w), p_.view(b), eps, p_.view(y), p_.view(mean), p_.view(rstd));
}

template <class P>
void CudaBackend<P>::layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                         const Tensor& w, const Tensor& dx, const Tensor& dw, const Tensor& db) {
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
  ops::layer_norm_backward(p_.par(), p_.view(dy), p_.view(x), p_.view(mean), p_.view(rstd), p_.view(w), p_.view(dx), p_.view(dw),
                           p_.view(db));
}

template <class P>
void CudaBackend<P>::cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index, double ls,
                                   const Tensor& rowloss, const Tensor& lse, const Tensor& valid) {
  const char* op = "cross_entropy";
  require_on_cuda(logits, op, "logits");
  require_float(logits, op);
  require_target(logits, target, op);
  require_rows(logits, rowloss, op, "rowloss");
  require_rows(logits, lse, op, "lse");
  require_rows(logits, valid, op, "valid");
  ops::cross_entropy(p_.par(), p_.view(logits), p_.view(target), ignore_index, ls, p_.view(rowloss), p_.view(lse),
                     p_.view(valid));
}

template <class P>
void CudaBackend<P>::cross_entropy_backward(const Tensor& logits, const Tensor& target, const Tensor& lse, int64_t ignore_index,
                                            double ls, const Tensor& row_scale, const Tensor& dx) {
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
  ops::cross_entropy_backward(p_.par(), p_.view(logits), p_.view(target), p_.view(lse), ignore_index, ls, p_.view(row_scale),
                              p_.view(dx));
}

template <class P> void CudaBackend<P>::dropout_mask(uint64_t base, double p, const Tensor& mask) {
  require_cuda(mask, "dropout", "mask");
  require_float(mask, "dropout");
  if (!(p >= 0.0 && p <= 1.0)) fail("dropout (cuda): p must be in [0, 1], got " + std::to_string(p));
  ops::dropout_mask(p_.par(), base, p, p_.view(mask));
}

// gates (B, 4 Hd), c (B, Hd) and the (B, 2, Hd) state pair, contiguous on this device, one float dtype
inline void require_lstm_cell(const Tensor& gates, const Tensor& c, const Tensor& pair, const char* op, const char* what) {
  require_cuda(gates, op, "gates");
  require_cuda(c, op, "c");
  require_cuda(pair, op, what);
  require_float(c, op);
  if (c.dim() != 2 || gates.shape() != Shape{c.size(0), 4 * c.size(1)} || pair.shape() != Shape{c.size(0), 2, c.size(1)} ||
      gates.dtype() != c.dtype() || pair.dtype() != c.dtype())
    fail(std::string(op) + " (cuda): expected gates (B, 4Hd), c (B, Hd) and " + what + " (B, 2, Hd) of one dtype, found " +
         shape_str(gates.shape()) + " " + dtype_name(gates.dtype()) + ", " + shape_str(c.shape()) + " " + dtype_name(c.dtype()) +
         " and " + shape_str(pair.shape()) + " " + dtype_name(pair.dtype()));
}

template <class P> void CudaBackend<P>::lstm_cell(const Tensor& gates, const Tensor& c, const Tensor& hc) {
  require_lstm_cell(gates, c, hc, "lstm_cell", "hc");
  ops::lstm_cell(p_.par(), p_.view(gates), p_.view(c), p_.view(hc));
}

template <class P>
void CudaBackend<P>::lstm_cell_backward(const Tensor& gates, const Tensor& c, const Tensor& dhc, const Tensor& dgates,
                                        const Tensor& dc) {
  const char* op = "lstm_cell backward";
  require_lstm_cell(gates, c, dhc, op, "dhc");
  require_cuda(dgates, op, "dgates");
  require_cuda(dc, op, "dc");
  require_same(gates, dgates, op, "gates", "dgates");
  require_same(c, dc, op, "c", "dc");
  ops::lstm_cell_backward(p_.par(), p_.view(gates), p_.view(c), p_.view(dhc), p_.view(dgates), p_.view(dc));
}

}  // namespace dl::cuda

// The family's methods compiled for platform P, expanded inside namespace dl::cuda (cuda/gpu_nn.cu, cuda/twin.cpp).
#define DL_CUDA_NN_FAMILY(P)                                                                                                   \
  template void CudaBackend<P>::softmax(const Tensor&, int64_t, bool, const Tensor&);                                          \
  template void CudaBackend<P>::softmax_backward(const Tensor&, const Tensor&, int64_t, bool, const Tensor&);                  \
  template void CudaBackend<P>::softmax_last(const Tensor&, const Tensor&);                                                    \
  template void CudaBackend<P>::layer_norm(const Tensor&, const Tensor&, const Tensor&, double, const Tensor&, const Tensor&,  \
                                           const Tensor&);                                                                     \
  template void CudaBackend<P>::layer_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, \
                                                    const Tensor&, const Tensor&, const Tensor&);                              \
  template void CudaBackend<P>::cross_entropy(const Tensor&, const Tensor&, int64_t, double, const Tensor&, const Tensor&,     \
                                              const Tensor&);                                                                  \
  template void CudaBackend<P>::cross_entropy_backward(const Tensor&, const Tensor&, const Tensor&, int64_t, double,           \
                                                       const Tensor&, const Tensor&);                                          \
  template void CudaBackend<P>::dropout_mask(uint64_t, double, const Tensor&);                                                 \
  template void CudaBackend<P>::lstm_cell(const Tensor&, const Tensor&, const Tensor&);                                        \
  template void CudaBackend<P>::lstm_cell_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&);
