// tensor/linalg.h - matrix products on OpenBLAS (cblas_sgemm / cblas_dgemm), no autograd.
//
// Shape letters: M rows of a, K the contracted dim, N columns of b; "batch" = every dim before the last two.
//   matmul(a, b)       PyTorch semantics: 1-D a is a row vector (1, K) whose 1 is dropped from the result,
//                      1-D b is a column vector (K, 1) likewise; batch dims broadcast (NumPy rules).
//   linear(x, w, b)    y = x @ w^T + b, x (..., in), w (out, in) as torch.nn.Linear, b (out) or undefined.
//   matmul_into        the engine under both: out (+)= a @ b, where out's batch dims may be a reduction
//                      of the broadcast batch (size 1 or missing) -- that is how backward sums over
//                      broadcast batch dims without materialising per-batch products.
//
// How operands reach sgemm (never by copying a transposed operand):
//   - a 2-D slice with strides (rs, 1) is passed as NoTrans with ld = rs; one with strides (1, cs) as Trans
//     with ld = cs. Only a slice that is neither (e.g. an expanded, stride-0 matrix) is made contiguous.
//   - fold batch into M: when b is shared across the batch (2-D, or batch strides 0) and a's batch dims
//     merge with its M dim into one stride, (B, T, C) @ (C, D) is ONE sgemm of (B*T, C) @ (C, D).
//   - fold batch into K: when out is summed over the whole batch (dW = sum_b X_b^T dY_b) and both operands'
//     batch dims merge with their K dim, it is ONE sgemm with K' = B*K.
//   - otherwise one sgemm per batch element: small ones side by side on the OpenMP threads, large ones in turn.
// Threads: OpenBLAS runs single-threaded; gemm() cuts a large product into row or column panels, one per
// OpenMP thread (one thread pool for the whole library; see gemm_panels in linalg.cpp for why).
// Precision: under set_matmul_precision(Precision::bf16) (tensor/bf16.h) every float32 product here with alpha 1 and
// beta 0 or 1 runs on the bf16 GEMM (tensor/bf16_gemm.h: operands rounded to bf16, float32 sums), where the CPU has it.
#pragma once
#include "tensor/tensor.h"

namespace dl {

Tensor matmul(const Tensor& a, const Tensor& b);
// out (..., M, N) contiguous; a (..., M, K), b (..., K, N) (both at least 2-D). Batch dims of a and b
// broadcast to a full batch shape; out's batch dims must broadcast to it too, and every full-batch element
// that maps onto the same out slice is summed into it. accumulate: out += a @ b, else out = a @ b.
void matmul_into(const Tensor& out, const Tensor& a, const Tensor& b, bool accumulate);

// Gradients of y = matmul(a, b) for upstream dy (y's shape):
//   da = dy @ b^T  summed over batch dims a was broadcast along      (a 1-D: the unsqueezed dim dropped)
//   db = a^T @ dy  summed over batch dims b was broadcast along
struct MatmulGrads {
  Tensor da, db;
};
MatmulGrads matmul_backward(const Tensor& a, const Tensor& b, const Tensor& dy, bool need_a, bool need_b);

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias);
// y = x w^T + b:  dx = dy @ w,  dw = sum over rows of dy^T x (one sgemm, rows folded into K),  db = sum over rows of dy
struct LinearGrads {
  Tensor dx, dw, db;
};
LinearGrads linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, bool need_x, bool need_w, bool need_b);
// Under Precision::bf16 (tensor/bf16.h) dw rounds x to bf16 pairs anyway, so a linear layer keeps those instead of x
// (autograd/linalg.cpp): half the bytes held from the forward to the backward, and x is not converted a second time.
// linear_input_bf16 packs x (..., in), rows folded, as dw's B operand; the same bits as linear_backward from x.
struct Bf16PackedB;  // tensor/bf16_gemm.h
bool linear_keeps_bf16_input(const Tensor& x);  // bf16 products active, x float32 on the CPU with at least 2 dims
Bf16PackedB linear_input_bf16(const Tensor& x);
// y = linear(x, w, bias) and `kept` = linear_input_bf16(x), with x read once for both (bf16_pack_both): the same bits.
// Where linear_keeps_bf16_input(x) holds.
Tensor linear_keeping_bf16_input(const Tensor& x, const Tensor& w, const Tensor& bias, Bf16PackedB& kept);
LinearGrads linear_backward(const Bf16PackedB& x, const Shape& x_shape, const Tensor& w, const Tensor& dy, bool need_x, bool need_w,
                            bool need_b);

// Raw row-major GEMM for kernels in other files (conv): C (M, N) = alpha op(A) op(B) + beta C.
// Inside an OpenMP parallel region it runs single-threaded on the calling thread.
template <class T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, const T* B, int64_t ldb,
          T beta, T* C, int64_t ldc);

}  // namespace dl
