// cuda/backend_reduce.cuh - reductions and the optimizer of CudaBackend<P> (cuda/backend.h): sum / mean / max / min
// (+ index) / logsumexp / var over any dims (cuda/ops/reduce.cuh; contiguous row sums go to the block-per-row kernel),
// cumsum along one dim; the fused Adam/AdamW update and the f64 sum of squares the global gradient norm is made of, per
// buffer or over many buffers in one launch (cuda/ops/optim.cuh).
#pragma once
#include "cuda/backend.h"
#include "cuda/checks.h"
#include "cuda/ops/optim.cuh"
#include "cuda/ops/reduce.cuh"

namespace dl::cuda {

template <class P>
void CudaBackend<P>::reduce(ReduceOp op, const Tensor& x, int64_t nkept, const Tensor& values, const Tensor& indices) {
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
  if (op == ReduceOp::sum && nkept == x.dim() - 1 && x.is_contiguous() && x.size(-1) > 0)  // rows: the block-per-row kernel
    return p_.sum_last(x.raw_data(), values.raw_data(), kept, x.size(-1), x.dtype());
  ops::reduce(p_.par(), op, p_.view(x), nkept, p_.view(values), p_.view(indices));
}

template <class P> void CudaBackend<P>::sum_last(const Tensor& x, const Tensor& out) {
  require_cuda(x, "sum_last", "x");
  require_cuda(out, "sum_last", "out");
  require_float(x, "sum_last");
  int64_t C = x.dim() == 0 ? 1 : x.size(-1), R = C == 0 ? out.numel() : x.numel() / C;
  if (out.numel() != R || out.dtype() != x.dtype())
    fail("sum_last (cuda): x " + shape_str(x.shape()) + " needs out of " + std::to_string(R) + " elements of " +
         dtype_name(x.dtype()) + ", got " + shape_str(out.shape()) + " " + dtype_name(out.dtype()));
  p_.sum_last(x.raw_data(), out.raw_data(), R, C, x.dtype());
}

template <class P> void CudaBackend<P>::cumsum(const Tensor& x, int64_t d, bool reverse, const Tensor& out) {
  require_cuda(x, "cumsum", "x");
  require_cuda(out, "cumsum", "out");
  require_same(x, out, "cumsum", "x", "out");
  if (x.dim() > 0 && (d < 0 || d >= x.dim())) fail("cumsum (cuda): dim " + std::to_string(d) + " out of range");
  ops::cumsum(p_.par(), p_.view(x), d, reverse, p_.view(out));
}

template <class P>
void CudaBackend<P>::adam_step(const AdamScalars& s, const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v) {
  const char* op = "adam_step";
  require_cuda(param, op, "param");
  require_cuda(grad, op, "grad");
  require_cuda(m, op, "exp_avg");
  require_cuda(v, op, "exp_avg_sq");
  require_float(param, op);
  require_same(param, grad, op, "param", "grad");
  require_same(param, m, op, "param", "exp_avg");
  require_same(param, v, op, "param", "exp_avg_sq");
  ops::adam_step(p_.par(), s, p_.view(param), p_.view(grad), p_.view(m), p_.view(v));
}

template <class P> double CudaBackend<P>::sum_sq(const Tensor& g) {
  require_cuda(g, "sum_sq", "g");
  require_float(g, "sum_sq");
  return ops::sum_sq(p_.par(), p_.view(g));
}

// The device table of ops::SlotTable for k buffers of `width` tensors each (list f holds field f's tensors, checked and
// of one dtype): pointers as integers, then the k + 1 starts, copied to the device in one transfer. The table tensor
// must outlive the launch (the caller holds it).
template <class P>
ops::SlotTable slot_table(P& p, Backend& be, const std::vector<const std::vector<Tensor>*>& fields, Tensor& table,
                          int64_t& total) {
  const int64_t width = (int64_t)fields.size();
  std::vector<int64_t> slots, starts;
  total = 0;
  for (size_t j = 0; j < fields[0]->size(); j++) {
    const int64_t n = (*fields[0])[j].numel();
    if (n == 0) continue;
    for (auto* f : fields) slots.push_back((int64_t)(uintptr_t)p.view((*f)[j]).raw_data());
    starts.push_back(total);
    total += n;
  }
  const int64_t k = (int64_t)starts.size();
  starts.push_back(total);
  std::vector<int64_t> host = slots;
  host.insert(host.end(), starts.begin(), starts.end());
  table = Tensor::empty({(int64_t)host.size()}, DType::i64, Device::cuda);
  if (!host.empty()) be.copy_from_host(table.raw_data(), host.data(), host.size() * sizeof(int64_t));
  const int64_t* base = (const int64_t*)p.view(table).raw_data();
  return ops::SlotTable{base, base + k * width, k, width};
}

// Lists of one length, every tensor contiguous on this device, the i-th of each list with the i-th parameter's size and
// all of one float dtype; returns the dtype.
inline DType require_lists(const std::vector<const std::vector<Tensor>*>& fields, const std::vector<const char*>& names,
                           const char* op) {
  DType t = DType::f32;
  for (size_t f = 0; f < fields.size(); f++) {
    if (fields[f]->size() != fields[0]->size())
      fail(std::string(op) + " (cuda): " + std::to_string(fields[0]->size()) + " " + names[0] + " but " +
           std::to_string(fields[f]->size()) + " " + names[f]);
    for (size_t j = 0; j < fields[f]->size(); j++) {
      const Tensor& x = (*fields[f])[j];
      const std::string what = std::string(names[f]) + "[" + std::to_string(j) + "]";
      require_cuda(x, op, what.c_str());
      if (f == 0 && j == 0) {
        require_float(x, op);
        t = x.dtype();
      }
      require_same((*fields[0])[j], x, op, (std::string(names[0]) + "[" + std::to_string(j) + "]").c_str(), what.c_str());
      if (x.dtype() != t)
        fail(std::string(op) + " (cuda): " + what + " is " + dtype_name(x.dtype()) + ", the first is " + dtype_name(t) +
             " (one call per dtype)");
    }
  }
  return t;
}

template <class P>
void CudaBackend<P>::adam_steps(const AdamScalars& s, const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                                const std::vector<Tensor>& m, const std::vector<Tensor>& v) {
  std::vector<const std::vector<Tensor>*> fields{&params, &grads, &m, &v};
  if (params.empty()) return;
  const DType t = require_lists(fields, {"params", "grads", "exp_avg", "exp_avg_sq"}, "adam_steps");
  Tensor table;
  int64_t total = 0;
  ops::SlotTable tab = slot_table(p_, *this, fields, table, total);
  ops::adam_steps(p_.par(), s, t, tab, total);
}

template <class P> double CudaBackend<P>::sum_sq_all(const std::vector<Tensor>& gs) {
  std::vector<const std::vector<Tensor>*> fields{&gs};
  if (gs.empty()) return 0.0;
  const DType t = require_lists(fields, {"grads"}, "sum_sq_all");
  Tensor table;
  int64_t total = 0;
  ops::SlotTable tab = slot_table(p_, *this, fields, table, total);
  return ops::sum_sq_all(p_.par(), t, tab, total);
}

}  // namespace dl::cuda

// The family's methods compiled for platform P, expanded inside namespace dl::cuda (cuda/gpu_reduce.cu, cuda/twin.cpp).
#define DL_CUDA_REDUCE_FAMILY(P)                                                                                           \
  template void CudaBackend<P>::reduce(ReduceOp, const Tensor&, int64_t, const Tensor&, const Tensor&);                    \
  template void CudaBackend<P>::sum_last(const Tensor&, const Tensor&);                                                    \
  template void CudaBackend<P>::cumsum(const Tensor&, int64_t, bool, const Tensor&);                                       \
  template void CudaBackend<P>::adam_step(const AdamScalars&, const Tensor&, const Tensor&, const Tensor&, const Tensor&); \
  template double CudaBackend<P>::sum_sq(const Tensor&);                                                                    \
  template void CudaBackend<P>::adam_steps(const AdamScalars&, const std::vector<Tensor>&, const std::vector<Tensor>&,       \
                                           const std::vector<Tensor>&, const std::vector<Tensor>&);                          \
  template double CudaBackend<P>::sum_sq_all(const std::vector<Tensor>&);
