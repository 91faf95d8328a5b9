// cuda/kernels.cuh - host-side launchers for the hand-written CUDA kernels in cuda/kernels.cu.
//
// Every launcher takes raw device pointers to CONTIGUOUS buffers plus element counts; validation of
// shapes, dtypes and devices is done by the caller (CudaBackend, cuda/backend.cuh), which names the op in its errors.
// All work is queued on the legacy default stream, in order with cudaMemcpy, cuBLAS and cuFFT calls.
// Dtypes: fill takes f32/f64/i64; the row reductions and the complex product take f32/f64.
// The strided elementwise ops and reductions are Thrust functors in cuda/ops/ (cuda/device_ops.h).
#pragma once
#include <cstdint>

#include "tensor/backend.h"

namespace dl::cuda {

void launch_fill(void* out, int64_t n, DType t, double value);
// x(rows, cols) -> out(rows): sum over the last dim, accumulated in f64 for both dtypes.
void launch_sum_last(const void* x, void* out, int64_t rows, int64_t cols, DType t);
// x(rows, cols) -> out(rows, cols): exp(x - max) / sum(exp(x - max)) per row.
void launch_softmax_last(const void* x, void* out, int64_t rows, int64_t cols, DType t);
// a[i] = a[i] * b[i] * scale over n complex numbers (interleaved re, im of dtype t).
void launch_complex_mul(void* a, const void* b, int64_t n, double scale, DType t);

}  // namespace dl::cuda
