// cuda/backend_attention.cuh - the attention primitive of CudaBackend<P> (cuda/backend.h): self-attention on the packed
// projection qkv, forward and backward, by the online softmax without a T x T matrix (cuda/ops/attention.cuh), the
// device path of nn/fused/flash_attention.h.
#pragma once
#include "cuda/backend.h"
#include "cuda/checks.h"
#include "cuda/ops/attention_tc.cuh"

namespace dl::cuda {

// qkv (B, T, 3C) f32 with C divisible by heads and C / heads <= the kernel's head limit; key_mask (B, T) f32 and prefix
// (B) i64 when defined; out (B, T, C) and L (B, NH, T) f32; all contiguous on this device.
inline void require_attention(const AttentionArgs& a, const Tensor& qkv, const Tensor& km, const Tensor& prefix,
                              const Tensor& out, const Tensor& L, const char* op) {
  require_cuda(qkv, op, "qkv");
  require_cuda(out, op, "out");
  require_cuda(L, op, "L");
  if (qkv.dtype() != DType::f32 || qkv.dim() != 3 || qkv.size(2) % 3 || a.heads <= 0 || (qkv.size(2) / 3) % a.heads)
    fail(std::string(op) + " (cuda): expected f32 qkv (B, T, 3C) with C divisible by " + std::to_string(a.heads) +
         " heads, got " + shape_str(qkv.shape()) + " " + dtype_name(qkv.dtype()));
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, HS = C / a.heads;
  if (HS > ops::kAttnMaxHead)
    fail(std::string(op) + " (cuda): head size " + std::to_string(HS) + " is above the kernel's " +
         std::to_string(ops::kAttnMaxHead) + " (use the composed path)");
  if (out.shape() != Shape{B, T, C} || out.dtype() != DType::f32 || L.shape() != Shape{B, a.heads, T} || L.dtype() != DType::f32)
    fail(std::string(op) + " (cuda): expected f32 out " + shape_str({B, T, C}) + " and L " + shape_str({B, a.heads, T}) +
         ", got " + shape_str(out.shape()) + " and " + shape_str(L.shape()));
  if (km.defined()) {
    require_cuda(km, op, "key_mask");
    if (km.shape() != Shape{B, T} || km.dtype() != DType::f32)
      fail(std::string(op) + " (cuda): key_mask must be f32 " + shape_str({B, T}) + ", got " + shape_str(km.shape()) + " " +
           dtype_name(km.dtype()));
  }
  if (prefix.defined()) {
    require_cuda(prefix, op, "prefix");
    if (prefix.shape() != Shape{B} || prefix.dtype() != DType::i64)
      fail(std::string(op) + " (cuda): prefix must be i64 " + shape_str({B}) + ", got " + shape_str(prefix.shape()) + " " +
           dtype_name(prefix.dtype()));
  }
}

template <class P>
void CudaBackend<P>::attention(const AttentionArgs& a, const Tensor& qkv, const Tensor& km, const Tensor& prefix,
                               const Tensor& out, const Tensor& L) {
  require_attention(a, qkv, km, prefix, out, L, "attention");
  ops::attention(p_.par(), a, p_.view(qkv), p_.view(km), p_.view(prefix), p_.view(out), p_.view(L));
}

template <class P>
void CudaBackend<P>::attention_backward(const AttentionArgs& a, const Tensor& qkv, const Tensor& km, const Tensor& prefix,
                                        const Tensor& out, const Tensor& L, const Tensor& dout, const Tensor& dqkv) {
  const char* op = "attention backward";
  require_attention(a, qkv, km, prefix, out, L, op);
  require_cuda(dout, op, "dout");
  require_cuda(dqkv, op, "dqkv");
  if (dout.shape() != out.shape() || dout.dtype() != DType::f32 || dqkv.shape() != qkv.shape() || dqkv.dtype() != DType::f32)
    fail(std::string(op) + " (cuda): expected f32 dout " + shape_str(out.shape()) + " and dqkv " + shape_str(qkv.shape()) +
         ", got " + shape_str(dout.shape()) + " and " + shape_str(dqkv.shape()));
  ops::attention_backward(p_.par(), a, p_.view(qkv), p_.view(km), p_.view(prefix), p_.view(out), p_.view(L), p_.view(dout),
                          p_.view(dqkv));
}

}  // namespace dl::cuda

// The family's methods compiled for platform P, expanded inside namespace dl::cuda (cuda/gpu_attention.cu, cuda/twin.cpp).
#define DL_CUDA_ATTENTION_FAMILY(P)                                                                                         \
  template void CudaBackend<P>::attention(const AttentionArgs&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, \
                                          const Tensor&);                                                                   \
  template void CudaBackend<P>::attention_backward(const AttentionArgs&, const Tensor&, const Tensor&, const Tensor&,       \
                                                   const Tensor&, const Tensor&, const Tensor&, const Tensor&);
