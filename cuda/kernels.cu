// cuda/kernels.cu - the hand-written CUDA kernels: fill, unary, binary, row sum, row softmax, complex product.
//
// Elementwise kernels are grid-stride loops over contiguous buffers (memory-bound: one load or two and one
// store per element, coalesced). Row kernels give each row one block and reduce with cub::BlockReduce
// (warp shuffles inside, shared memory across warps): 32 threads for rows of at most 64 elements, 256
// otherwise. The formulas are those of the CPU reference in tensor/elementwise.cpp, written once more in
// device code; tests/cuda/test_cuda.cpp checks the two agree op by op.
// What it is not: a strided/broadcasting kernel engine; callers make inputs contiguous first.
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
__device__ inline float d_log(float x) { return logf(x); }
__device__ inline double d_log(double x) { return log(x); }
__device__ inline float d_log1p(float x) { return log1pf(x); }
__device__ inline double d_log1p(double x) { return log1p(x); }
__device__ inline float d_sqrt(float x) { return sqrtf(x); }
__device__ inline double d_sqrt(double x) { return sqrt(x); }
__device__ inline float d_tanh(float x) { return tanhf(x); }
__device__ inline double d_tanh(double x) { return tanh(x); }
__device__ inline float d_erf(float x) { return erff(x); }
__device__ inline double d_erf(double x) { return erf(x); }
__device__ inline float d_abs(float x) { return fabsf(x); }
__device__ inline double d_abs(double x) { return fabs(x); }

template <class T> __device__ inline T sigmoid_f(T x) { return (T)1 / ((T)1 + d_exp(-x)); }

// Same formulas as tensor/elementwise.cpp (gelu: erf and tanh forms; softplus: torch's threshold 20).
template <UnaryOp OP, class T> __device__ inline T apply_unary(T v) {
  if constexpr (OP == UnaryOp::neg) return -v;
  else if constexpr (OP == UnaryOp::exp) return d_exp(v);
  else if constexpr (OP == UnaryOp::log) return d_log(v);
  else if constexpr (OP == UnaryOp::sqrt) return d_sqrt(v);
  else if constexpr (OP == UnaryOp::rsqrt) return (T)1 / d_sqrt(v);
  else if constexpr (OP == UnaryOp::abs) return d_abs(v);
  else if constexpr (OP == UnaryOp::tanh) return d_tanh(v);
  else if constexpr (OP == UnaryOp::sigmoid) return sigmoid_f(v);
  else if constexpr (OP == UnaryOp::relu) return v > (T)0 ? v : (T)0;
  else if constexpr (OP == UnaryOp::gelu_erf) return (T)0.5 * v * ((T)1 + d_erf(v * (T)0.70710678118654752440));
  else if constexpr (OP == UnaryOp::gelu_tanh) {
    const T k = (T)0.7978845608028654;  // sqrt(2/pi)
    return (T)0.5 * v * ((T)1 + d_tanh(k * (v + (T)0.044715 * v * v * v)));
  } else if constexpr (OP == UnaryOp::silu) return v * sigmoid_f(v);
  else if constexpr (OP == UnaryOp::softplus) return v > (T)20 ? v : d_log1p(d_exp(v));
}

template <BinaryOp OP, class T> __device__ inline T apply_binary(T x, T y) {
  if constexpr (OP == BinaryOp::add) return x + y;
  else if constexpr (OP == BinaryOp::sub) return x - y;
  else if constexpr (OP == BinaryOp::mul) return x * y;
  else return x / y;
}

// ---- elementwise kernels ----
template <class T> __global__ void fill_kernel(T* out, int64_t n, T v) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) out[i] = v;
}

template <UnaryOp OP, class T> __global__ void unary_kernel(const T* __restrict__ x, T* __restrict__ out, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = apply_unary<OP>(x[i]);
}

// No __restrict__: a, b and out may alias (x + x, or an in-place update).
template <BinaryOp OP, class T> __global__ void binary_kernel(const T* a, const T* b, T* out, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = apply_binary<OP>(a[i], b[i]);
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

template <UnaryOp OP, class T> void unary_as(const void* x, void* out, int64_t n) {
  unary_kernel<OP, T><<<grid_for(n), kThreads>>>((const T*)x, (T*)out, n);
}
template <class T> void unary_typed(UnaryOp op, const void* x, void* out, int64_t n) {
  switch (op) {
    case UnaryOp::neg: return unary_as<UnaryOp::neg, T>(x, out, n);
    case UnaryOp::exp: return unary_as<UnaryOp::exp, T>(x, out, n);
    case UnaryOp::log: return unary_as<UnaryOp::log, T>(x, out, n);
    case UnaryOp::sqrt: return unary_as<UnaryOp::sqrt, T>(x, out, n);
    case UnaryOp::rsqrt: return unary_as<UnaryOp::rsqrt, T>(x, out, n);
    case UnaryOp::abs: return unary_as<UnaryOp::abs, T>(x, out, n);
    case UnaryOp::tanh: return unary_as<UnaryOp::tanh, T>(x, out, n);
    case UnaryOp::sigmoid: return unary_as<UnaryOp::sigmoid, T>(x, out, n);
    case UnaryOp::relu: return unary_as<UnaryOp::relu, T>(x, out, n);
    case UnaryOp::gelu_erf: return unary_as<UnaryOp::gelu_erf, T>(x, out, n);
    case UnaryOp::gelu_tanh: return unary_as<UnaryOp::gelu_tanh, T>(x, out, n);
    case UnaryOp::silu: return unary_as<UnaryOp::silu, T>(x, out, n);
    case UnaryOp::softplus: return unary_as<UnaryOp::softplus, T>(x, out, n);
  }
  fail("unary (cuda): unknown op " + std::to_string((int)op));
}

template <BinaryOp OP, class T> void binary_as(const void* a, const void* b, void* out, int64_t n) {
  binary_kernel<OP, T><<<grid_for(n), kThreads>>>((const T*)a, (const T*)b, (T*)out, n);
}
template <class T> void binary_typed(BinaryOp op, const void* a, const void* b, void* out, int64_t n) {
  switch (op) {
    case BinaryOp::add: return binary_as<BinaryOp::add, T>(a, b, out, n);
    case BinaryOp::sub: return binary_as<BinaryOp::sub, T>(a, b, out, n);
    case BinaryOp::mul: return binary_as<BinaryOp::mul, T>(a, b, out, n);
    case BinaryOp::div: return binary_as<BinaryOp::div, T>(a, b, out, n);
  }
  fail("binary (cuda): unknown op " + std::to_string((int)op));
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

void launch_unary(UnaryOp op, const void* x, void* out, int64_t n, DType t) {
  if (n == 0) return;
  dispatch_float(t, "unary (cuda)", [&]<class T>() { unary_typed<T>(op, x, out, n); });
  DL_CUDA_CHECK_LAUNCH();
}

void launch_binary(BinaryOp op, const void* a, const void* b, void* out, int64_t n, DType t) {
  if (n == 0) return;
  dispatch_all(t, "binary (cuda)", [&]<class T>() { binary_typed<T>(op, a, b, out, n); });
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
