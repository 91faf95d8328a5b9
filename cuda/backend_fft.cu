// cuda/backend_fft.cu - the causal convolution of rows as a product of spectra on cuFFT (S4D's kernel applied to its
// input: autograd's causal_conv), with the plans cached per (length, rows, dtype).
#include "cuda/backend.cuh"
#include "cuda/checks.cuh"
#include "cuda/check.cuh"
#include "cuda/kernels.cuh"

namespace dl::cuda {

// Causal convolution out[t] = sum_{s<=t} a[s] b[t-s] per row, as a product of spectra: zero-padding
// both rows to n = 2L makes the circular convolution of length n equal the linear one on [0, L).
// cuFFT's inverse is unnormalised, so the product is scaled by 1/n.
void CudaBackend::fft_conv(const Tensor& a, const Tensor& b, const Tensor& out) {
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
    DeviceAllocator& al;
    size_t bytes;
    void* p;
    Scratch(DeviceAllocator& al, size_t bytes) : al(al), bytes(bytes), p(al.alloc(bytes)) {}
    ~Scratch() { al.free(p, bytes); }
  };
  Scratch pa(allocator_, R * n * es), pb(allocator_, R * n * es), fa(allocator_, R * nc * 2 * es),
      fb(allocator_, R * nc * 2 * es);
  // rows of L go into rows of n whose second half is zero
  DL_CUDA_CHECK(cudaMemsetAsync(pa.p, 0, pa.bytes));
  DL_CUDA_CHECK(cudaMemsetAsync(pb.p, 0, pb.bytes));
  DL_CUDA_CHECK(cudaMemcpy2DAsync(pa.p, n * es, a.raw_data(), L * es, L * es, R, cudaMemcpyDeviceToDevice));
  DL_CUDA_CHECK(cudaMemcpy2DAsync(pb.p, n * es, b.raw_data(), L * es, L * es, R, cudaMemcpyDeviceToDevice));

  std::lock_guard<std::mutex> lock(fft_mu_);
  const FftPlans& plans = fft_plans(n, R, a.dtype());
  if (a.dtype() == DType::f32) {
    DL_CUDA_CHECK(cufftExecR2C(plans.forward, (cufftReal*)pa.p, (cufftComplex*)fa.p));
    DL_CUDA_CHECK(cufftExecR2C(plans.forward, (cufftReal*)pb.p, (cufftComplex*)fb.p));
    cuda::launch_complex_mul(fa.p, fb.p, R * nc, 1.0 / (double)n, a.dtype());
    DL_CUDA_CHECK(cufftExecC2R(plans.inverse, (cufftComplex*)fa.p, (cufftReal*)pa.p));
  } else {
    DL_CUDA_CHECK(cufftExecD2Z(plans.forward, (cufftDoubleReal*)pa.p, (cufftDoubleComplex*)fa.p));
    DL_CUDA_CHECK(cufftExecD2Z(plans.forward, (cufftDoubleReal*)pb.p, (cufftDoubleComplex*)fb.p));
    cuda::launch_complex_mul(fa.p, fb.p, R * nc, 1.0 / (double)n, a.dtype());
    DL_CUDA_CHECK(cufftExecZ2D(plans.inverse, (cufftDoubleComplex*)fa.p, (cufftDoubleReal*)pa.p));
  }
  // keep the first L of each row of n
  DL_CUDA_CHECK(cudaMemcpy2DAsync(out.raw_data(), L * es, pa.p, n * es, L * es, R, cudaMemcpyDeviceToDevice));
  // The scratch blocks go back to the cache here while the copy may still run: safe, because the next
  // user of a block is queued behind it on the same stream.
}

// Plans are cached per (n, batch, dtype): creating one costs far more than executing it. A run with
// many distinct shapes would pile up plans (each holds a work area), so past kMaxPlans we start over.
const CudaBackend::FftPlans& CudaBackend::fft_plans(int64_t n, int64_t batch, DType t) {
  constexpr size_t kMaxPlans = 32;
  auto key = std::make_tuple(n, batch, t);
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  if (plans_.size() >= kMaxPlans) {
    for (auto& [k, p] : plans_) {
      cufftDestroy(p.forward);
      cufftDestroy(p.inverse);
    }
    plans_.clear();
  }
  // Basic layout (null embeds): `batch` rows of n reals <-> `batch` rows of n/2 + 1 complex numbers.
  FftPlans p;
  bool f32 = t == DType::f32;
  int len = (int)n;
  DL_CUDA_CHECK(cufftPlanMany(&p.forward, 1, &len, nullptr, 1, 0, nullptr, 1, 0, f32 ? CUFFT_R2C : CUFFT_D2Z, (int)batch));
  cufftResult r = cufftPlanMany(&p.inverse, 1, &len, nullptr, 1, 0, nullptr, 1, 0, f32 ? CUFFT_C2R : CUFFT_Z2D, (int)batch);
  if (r != CUFFT_SUCCESS) cufftDestroy(p.forward);
  DL_CUDA_CHECK(r);
  return plans_.emplace(key, p).first->second;
}

}  // namespace dl::cuda
