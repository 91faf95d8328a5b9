// cuda/backend_libs.cuh - the two ops of CudaBackend<P> (cuda/backend.h) that call a library: matmul on the platform's
// GEMM (cuBLAS's strided-batched GEMM on the GPU) and the causal FFT convolution on its real FFTs (cuFFT's).
// What is here is what both platforms share: the row-major to column-major mapping, the batch strides, the padding,
// the scaling; the twin runs it against the CPU's BLAS and FFT called with the same conventions.
#pragma once
#include <algorithm>

#include "cuda/backend.h"
#include "cuda/checks.h"

namespace dl::cuda {

// cuBLAS is column-major. A row-major (M, N) buffer read column-major is its transpose, so we ask for
// C^T = B^T A^T: an (N, M) column-major product of b (as N x K, ld N) and a (as K x M, ld K), which lands in memory
// exactly as row-major C. Rank-2 operands are a batch of one; a batch of one against a batch of B is broadcast with a
// zero stride.
template <class P> void CudaBackend<P>::matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  const char* op = "matmul";
  require_cuda(a, op, "a");
  require_cuda(b, op, "b");
  require_cuda(out, op, "out");
  require_float(a, op);
  if (a.dtype() != b.dtype() || a.dtype() != out.dtype())
    fail(std::string("matmul (cuda): dtypes differ: a ") + dtype_name(a.dtype()) + ", b " + dtype_name(b.dtype()) + ", out " +
         dtype_name(out.dtype()));
  if ((a.dim() != 2 && a.dim() != 3) || (b.dim() != 2 && b.dim() != 3))
    fail("matmul (cuda): expected a (B, M, K) or (M, K) and b (B, K, N) or (K, N), got a " + shape_str(a.shape()) + " and b " +
         shape_str(b.shape()));
  int64_t Ba = a.dim() == 3 ? a.size(0) : 1, Bb = b.dim() == 3 ? b.size(0) : 1;
  int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  int64_t B = std::max(Ba, Bb);
  if (b.size(-2) != K || (Ba != Bb && Ba != 1 && Bb != 1))
    fail("matmul (cuda): a " + shape_str(a.shape()) + " and b " + shape_str(b.shape()) + " do not multiply");
  if (out.numel() != B * M * N || out.size(-1) != N)
    fail("matmul (cuda): out " + shape_str(out.shape()) + " should be " + shape_str({B, M, N}));
  if (out.numel() == 0) return;
  if (K == 0) return fill(out, 0.0);
  int m = to_int(N, op, "N"), n = to_int(M, op, "M"), k = to_int(K, op, "K"), batch = to_int(B, op, "B");
  int64_t sa = Ba == 1 ? 0 : M * K, sb = Bb == 1 ? 0 : K * N, sc = M * N;
  p_.gemm(a.dtype(), m, n, k, b.raw_data(), m, sb, a.raw_data(), k, sa, out.raw_data(), m, sc, batch);
}

// Rows go to the platform's FFTs in power-of-two batches, largest first, at most kMaxFftBatch rows each: f(first, count)
// for 100 rows is f(0, 64), f(64, 32), f(96, 4). cuFFT's plans are made per (n, rows, dtype), so a batch whose row count
// changes (the last, partial batch of an epoch; evaluation's other batch size) reuses the power-of-two plans the full
// batches made instead of making (and holding the work areas of) two new plans each time. At most log2 rows + 1 calls.
constexpr int64_t kMaxFftBatch = int64_t(1) << 16;
template <class F> void in_fft_batches(int64_t rows, F&& f) {
  for (int64_t first = 0; first < rows;) {
    int64_t count = 1;
    while (count * 2 <= rows - first && count * 2 <= kMaxFftBatch) count *= 2;
    f(first, count);
    first += count;
  }
}

template <class P> void CudaBackend<P>::platform_rfft(DType t, int64_t n, int64_t rows, const void* in, void* out) {
  const size_t es = dtype_size(t), in_row = n * es, out_row = (n / 2 + 1) * 2 * es;
  in_fft_batches(rows, [&](int64_t first, int64_t count) {
    p_.rfft(t, n, count, (const char*)in + first * in_row, (char*)out + first * out_row);
  });
}

template <class P> void CudaBackend<P>::platform_irfft(DType t, int64_t n, int64_t rows, const void* in, void* out) {
  const size_t es = dtype_size(t), in_row = (n / 2 + 1) * 2 * es, out_row = n * es;
  in_fft_batches(rows, [&](int64_t first, int64_t count) {
    p_.irfft(t, n, count, (const char*)in + first * in_row, (char*)out + first * out_row);
  });
}

// Causal convolution out[t] = sum_{s<=t} a[s] b[t-s] per row, as a product of spectra: zero-padding both rows to
// n = 2L makes the circular convolution of length n equal the linear one on [0, L). The inverse transform is
// unnormalised (as cuFFT's), so the product is scaled by 1/n.
template <class P> void CudaBackend<P>::fft_conv(const Tensor& a, const Tensor& b, const Tensor& out) {
  const char* op = "fft_conv";
  require_cuda(a, op, "a");
  require_cuda(b, op, "b");
  require_cuda(out, op, "out");
  require_float(a, op);
  if (a.dim() < 1 || a.shape() != b.shape() || a.shape() != out.shape() || a.dtype() != b.dtype() || a.dtype() != out.dtype())
    fail("fft_conv (cuda): a, b and out must have one shape (R, L) and dtype, got a " + shape_str(a.shape()) + ", b " +
         shape_str(b.shape()) + ", out " + shape_str(out.shape()));
  int64_t L = a.size(-1);
  if (a.numel() == 0) return;
  int64_t R = a.numel() / L, n = 2 * L, nc = L + 1;
  size_t es = dtype_size(a.dtype());  // bytes of one real; a complex is two
  to_int(n, op, "2L");
  to_int(R, op, "rows");

  // scratch from the caching allocator: padded real rows (R, n) and spectra (R, nc)
  struct Scratch {
    DeviceAllocator<P>& al;
    size_t bytes;
    void* p;
    Scratch(DeviceAllocator<P>& al, size_t bytes) : al(al), bytes(bytes), p(al.alloc(bytes)) {}
    ~Scratch() { al.free(p, bytes); }
  };
  Scratch pa(allocator_, R * n * es), pb(allocator_, R * n * es), fa(allocator_, R * nc * 2 * es),
      fb(allocator_, R * nc * 2 * es);
  // rows of L go into rows of n whose second half is zero
  p_.memset_zero(pa.p, pa.bytes);
  p_.memset_zero(pb.p, pb.bytes);
  p_.copy_rows(pa.p, n * es, a.raw_data(), L * es, L * es, R);
  p_.copy_rows(pb.p, n * es, b.raw_data(), L * es, L * es, R);
  platform_rfft(a.dtype(), n, R, pa.p, fa.p);
  platform_rfft(a.dtype(), n, R, pb.p, fb.p);
  p_.complex_mul(fa.p, fb.p, R * nc, 1.0 / (double)n, a.dtype());
  platform_irfft(a.dtype(), n, R, fa.p, pa.p);
  // keep the first L of each row of n
  p_.copy_rows(out.raw_data(), L * es, pa.p, n * es, L * es, R);
  // The scratch blocks go back to the cache here while the copy may still run on the GPU: safe, because the next
  // user of a block is queued behind it on the same stream.
}

// Rows of n reals <-> rows of h = n/2 + 1 complex bins, unnormalised, as the platform's FFTs give them.
template <class P> void CudaBackend<P>::rfft_rows(const Tensor& x, const Tensor& X) {
  require_spectrum_rows(x, X, "rfft");
  if (x.numel() == 0) return;
  platform_rfft(x.dtype(), to_int(x.size(1), "rfft", "n"), to_int(x.size(0), "rfft", "rows"), x.raw_data(), X.raw_data());
}

template <class P> void CudaBackend<P>::irfft_rows(const Tensor& X, const Tensor& x) {
  require_spectrum_rows(x, X, "irfft");
  if (x.numel() == 0) return;
  platform_irfft(x.dtype(), to_int(x.size(1), "irfft", "n"), to_int(x.size(0), "irfft", "rows"), X.raw_data(),
                 x.raw_data());
}

}  // namespace dl::cuda

// The family's methods compiled for platform P, expanded inside namespace dl::cuda (cuda/gpu.cu, cuda/twin.cpp).
#define DL_CUDA_LIBS_FAMILY(P)                                                         \
  template void CudaBackend<P>::matmul(const Tensor&, const Tensor&, const Tensor&);   \
  template void CudaBackend<P>::fft_conv(const Tensor&, const Tensor&, const Tensor&); \
  template void CudaBackend<P>::rfft_rows(const Tensor&, const Tensor&);               \
  template void CudaBackend<P>::irfft_rows(const Tensor&, const Tensor&);                \
  template void CudaBackend<P>::platform_rfft(DType, int64_t, int64_t, const void*, void*); \
  template void CudaBackend<P>::platform_irfft(DType, int64_t, int64_t, const void*, void*);
