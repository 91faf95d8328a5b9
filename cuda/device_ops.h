// cuda/device_ops.h - the Thrust-based device ops of cuda/ops/*.cuh, instantiated for the GPU.
//
// Each function here is one line in cuda/ops_*.cu: the shared launch function of cuda/ops/ called with
// thrust::cuda::par (the legacy default stream, so in order with cudaMemcpy, cuBLAS and cuFFT). The
// arguments are checked by CudaBackend (cuda/backend_*.cu, cuda/checks.cuh) first; tests/cuda_logic/ runs the same launch functions on the
// CPU through Thrust's C++ system. Shapes and strides are those of tensor/backend.h's methods.
#pragma once
#include "tensor/backend.h"

namespace dl::cuda {

// cuda/ops_elementwise.cu
void copy_strided(const Tensor& src, const Tensor& dst);
void cast(const Tensor& src, const Tensor& dst);
void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out);
void unary(UnaryOp op, const Tensor& x, const Tensor& out);
void unary_ext(ExtUnaryOp op, double alpha, const Tensor& x, const Tensor& out);
void unary_backward(UnaryOp op, const Tensor& xy, const Tensor& dy, const Tensor& dx);
void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
void binary_ext(ExtBinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);

// cuda/ops_reduce.cu
void reduce(ReduceOp op, const Tensor& x, int64_t nkept, const Tensor& values, const Tensor& indices);
void cumsum(const Tensor& x, int64_t d, bool reverse, const Tensor& out);

// cuda/ops_nn.cu
void softmax(const Tensor& x, int64_t dim, bool log, const Tensor& y);
void softmax_backward(const Tensor& y, const Tensor& dy, int64_t dim, bool log, const Tensor& dx);
void layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Tensor& y, const Tensor& mean, const Tensor& rstd);
void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& w, const Tensor& dx,
                         const Tensor& dw, const Tensor& db);
void cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index, double ls, const Tensor& rowloss,
                   const Tensor& lse, const Tensor& valid);
void cross_entropy_backward(const Tensor& logits, const Tensor& target, const Tensor& lse, int64_t ignore_index, double ls,
                            const Tensor& row_scale, const Tensor& dx);

// cuda/ops_index.cu
void embedding(const Tensor& weight, const Tensor& idx, const Tensor& out);
void embedding_backward(const Tensor& dy, const Tensor& idx, const Tensor& dw);
void gather(const Tensor& x, int64_t d, const Tensor& idx, const Tensor& out);
void scatter_add(const Tensor& out, int64_t d, const Tensor& idx, const Tensor& src);
void index_add(const Tensor& out, int64_t d, const Tensor& idx, const Tensor& src);
void one_hot(const Tensor& idx, const Tensor& out);
void dropout_mask(uint64_t base, double p, const Tensor& mask);
void adam_step(const AdamScalars& s, const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v);
double sum_sq(const Tensor& g);

}  // namespace dl::cuda
