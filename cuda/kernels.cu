// cuda/kernels.cu - the hand-written CUDA kernels: fill, row sum, row softmax, complex product.
// (The strided unary and binary ops moved to the Thrust functors of cuda/ops/elementwise.cuh.)
//
// Fill is a grid-stride loop over a contiguous buffer. Row kernels give each row one block and reduce with cub::BlockReduce
// (warp shuffles inside, shared memory across warps): 32 threads for rows of at most 64 elements, 256
// otherwise. The formulas are those of the CPU reference in tensor/elementwise.cpp, written once more in
// device code; tests/cuda/test_cuda.cpp checks the two agree op by op.
// What it is not: a strided kernel engine; callers make inputs contiguous first.
#include <cub/block/block_reduce.cuh>

#include "cuda/check.cuh"
#include "cuda/kernels.cuh"

namespace dl::cuda {
namespace {

constexpr int kThreads = 256;

// Enough blocks to fill the device several times over; the grid-stride loop covers the rest.
unsigned grid_for(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  return (unsigned)(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}

// ---- device math: explicit f32/f64 overloads, so a float never goes through the double path ----
__device__ inline float d_exp(float x) { return expf(x); }
__device__ inline double d_exp(double x) { return exp(x); }

// ---- elementwise kernels ----
template <class T> __global__ void fill_kernel(T* out, int64_t n, T v) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) out[i] = v;
}

template <class T> struct MaxOp {
  __device__ T operator()(T a, T b) const { return b > a ? b : a; }
};

// ---- row kernels: one block per row (grid-stride over rows) ----
// Accumulates in f64 even for f32 input, like the CPU reductions (tensor/reduce.h), so a long row of
// mixed signs keeps its small sum.
template <class T, int BLOCK>
__global__ void sum_last_kernel(const T* __restrict__ x, T* __restrict__ out, int64_t rows, int64_t cols) {
  using Reduce = cub::BlockReduce<double, BLOCK>;
  __shared__ typename Reduce::TempStorage tmp;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * cols;
    double acc = 0;
    for (int64_t j = threadIdx.x; j < cols; j += BLOCK) acc += (double)row[j];
    double total = Reduce(tmp).Sum(acc);
    if (threadIdx.x == 0) out[r] = (T)total;
    __syncthreads();  // tmp is reused by the next row
  }
}

// softmax(x)_j = exp(x_j - m) / sum_k exp(x_k - m), m = max_k x_k: three reads of the row, one write.
template <class T, int BLOCK>
__global__ void softmax_last_kernel(const T* __restrict__ x, T* __restrict__ out, int64_t rows, int64_t cols) {
  using Reduce = cub::BlockReduce<T, BLOCK>;
  __shared__ typename Reduce::TempStorage tmp;
  __shared__ T row_max, row_inv_sum;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* in = x + r * cols;
    T* o = out + r * cols;
    T m = -INFINITY;
    for (int64_t j = threadIdx.x; j < cols; j += BLOCK) m = in[j] > m ? in[j] : m;
    m = Reduce(tmp).Reduce(m, MaxOp<T>());
    if (threadIdx.x == 0) row_max = m;
    __syncthreads();
    m = row_max;
    T s = 0;
    for (int64_t j = threadIdx.x; j < cols; j += BLOCK) s += d_exp(in[j] - m);
    s = Reduce(tmp).Sum(s);
    if (threadIdx.x == 0) row_inv_sum = (T)1 / s;
    __syncthreads();
    T inv = row_inv_sum;
    for (int64_t j = threadIdx.x; j < cols; j += BLOCK) o[j] = d_exp(in[j] - m) * inv;
    __syncthreads();  // row_max / row_inv_sum / tmp are reused by the next row
  }
}

// (a.re + i a.im)(b.re + i b.im) * scale, in place in a. V is float2 (cufftComplex) or double2.
template <class V, class T> __global__ void complex_mul_kernel(V* a, const V* __restrict__ b, int64_t n, T scale) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    V x = a[i], y = b[i];
    a[i] = V{(x.x * y.x - x.y * y.y) * scale, (x.x * y.y + x.y * y.x) * scale};
  }
}

unsigned row_grid(int64_t rows) { return (unsigned)(rows < (1 << 30) ? rows : (1 << 30)); }

template <class T> void sum_last_typed(const void* x, void* out, int64_t rows, int64_t cols) {
  if (cols <= 64) sum_last_kernel<T, 32><<<row_grid(rows), 32>>>((const T*)x, (T*)out, rows, cols);
  else sum_last_kernel<T, 256><<<row_grid(rows), 256>>>((const T*)x, (T*)out, rows, cols);
}
template <class T> void softmax_last_typed(const void* x, void* out, int64_t rows, int64_t cols) {
  if (cols <= 64) softmax_last_kernel<T, 32><<<row_grid(rows), 32>>>((const T*)x, (T*)out, rows, cols);
  else softmax_last_kernel<T, 256><<<row_grid(rows), 256>>>((const T*)x, (T*)out, rows, cols);
}

}  // namespace

void launch_fill(void* out, int64_t n, DType t, double value) {
  if (n == 0) return;
  dispatch_all(t, "fill (cuda)", [&]<class T>() { fill_kernel<T><<<grid_for(n), kThreads>>>((T*)out, n, (T)value); });
  DL_CUDA_CHECK_LAUNCH();
}

void launch_sum_last(const void* x, void* out, int64_t rows, int64_t cols, DType t) {
  if (rows == 0) return;
  dispatch_float(t, "sum_last (cuda)", [&]<class T>() { sum_last_typed<T>(x, out, rows, cols); });
  DL_CUDA_CHECK_LAUNCH();
}

void launch_softmax_last(const void* x, void* out, int64_t rows, int64_t cols, DType t) {
  if (rows == 0 || cols == 0) return;
  dispatch_float(t, "softmax_last (cuda)", [&]<class T>() { softmax_last_typed<T>(x, out, rows, cols); });
  DL_CUDA_CHECK_LAUNCH();
}

void launch_complex_mul(void* a, const void* b, int64_t n, double scale, DType t) {
  if (n == 0) return;
  if (t == DType::f32)
    complex_mul_kernel<float2, float><<<grid_for(n), kThreads>>>((float2*)a, (const float2*)b, n, (float)scale);
  else if (t == DType::f64)
    complex_mul_kernel<double2, double><<<grid_for(n), kThreads>>>((double2*)a, (const double2*)b, n, scale);
  else fail(std::string("fft_conv (cuda): expected f32 or f64, found ") + dtype_name(t));
  DL_CUDA_CHECK_LAUNCH();
}

}  // namespace dl::cuda
