// tests/cuda/smoke/smoke.h - what the parts of gpu_smoke share: one result line per item, the host references' error
// measure, and a CUDA status check.
//
// gpu_smoke exercises the library code below the op dispatch (the raw kernels of cuda/kernels.cuh, cuBLAS, cuFFT, the
// caching allocator, NCCL) each against a host reference, in one process with no test framework, so it runs even
// where the GTest binaries cannot start. Every item is one function returning an Outcome; run() times it, catches what
// it throws (a CUDA error, an exception of the backend) as a FAIL naming the error, and prints one line:
//   PASS  kernel.fill.f32                       max_err 0         tol 0        0.41 ms  n 1 255 100003
// What it is not: a test of the op dispatch (test_cuda, the AgreesOnDevice cases) or a benchmark (bench_cuda).
#pragma once
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace dl::smoke {

struct Outcome {
  double max_err = 0;  // the item's own error measure (each family says which), compared with tol
  double tol = 0;
  std::string detail;  // sizes, or what went wrong
  bool pass() const { return max_err <= tol; }
};

// An item that cannot run (e.g. NCCL not in the build): thrown by the item, reported as SKIP with the reason.
struct Skip : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Report {
 public:
  // tsv_path: "" for no table; only: run just the items whose name starts with it ("" for all)
  Report(const std::string& tsv_path, const std::string& only);
  ~Report();
  // Runs one item (unless a skip reason is given: then it is reported skipped), prints its line, appends it to the TSV.
  void run(const std::string& name, const std::function<Outcome()>& item, const std::string& skip_reason = "");
  int failed() const { return failed_; }
  int passed() const { return passed_; }
  int skipped() const { return skipped_; }

 private:
  void line(const char* status, const std::string& name, double err, double tol, double ms, const std::string& detail);
  std::FILE* tsv_ = nullptr;
  std::string only_;
  int failed_ = 0, passed_ = 0, skipped_ = 0;
};

// Throws std::runtime_error naming the call and the CUDA error string (e.g. "cudaMalloc: out of memory").
void cuda_check(cudaError_t e, const char* call);
// Waits for the device and turns a fault inside a kernel (sticky) into an error naming `what`.
void sync_check(const char* what);

// A cudaMalloc'd buffer (plain device memory, not the backend's cache: the kernels are checked on their own), freed
// on scope exit; put() and get() copy whole vectors of T.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) { cuda_check(cudaMalloc(&p_, bytes ? bytes : 1), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return p_; }
  template <class T> void put(const std::vector<T>& v) {
    check_size(v.size() * sizeof(T));
    cuda_check(cudaMemcpy(p_, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy (to the device)");
  }
  template <class T> std::vector<T> get_as(size_t n) const {
    check_size(n * sizeof(T));
    std::vector<T> v(n);
    cuda_check(cudaMemcpy(v.data(), p_, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy (to the host)");
    return v;
  }

 private:
  void check_size(size_t bytes) const {
    if (bytes > bytes_)
      throw std::runtime_error("DeviceBuffer: " + std::to_string(bytes) + " bytes asked of a buffer of " + std::to_string(bytes_));
  }
  void* p_ = nullptr;
  size_t bytes_;
};

template <class T> std::vector<double> as_double(const std::vector<T>& v) { return std::vector<double>(v.begin(), v.end()); }

// max |got - want| / max(1, max |want|): the error relative to the size of the result, so one tolerance serves
// results of any scale (and small results are judged absolutely).
double scaled_err(const std::vector<double>& got, const std::vector<double>& want);

// Every element of t, on the host, as f64 (an f64 tensor keeps its precision); of several, one after another
// (undefined ones skipped).
std::vector<double> f64_values(const Tensor& t);
std::vector<double> f64_values(const std::vector<Tensor>& ts);

// The families; each registers its items with the report (smoke_*.cpp).
void run_kernel_items(Report& r, const std::string& skip);
void run_blas_items(Report& r, const std::string& skip);
void run_fft_items(Report& r, const std::string& skip);
void run_alloc_items(Report& r, const std::string& skip);
void run_attention_items(Report& r, const std::string& skip);  // smoke_attention.cpp: the attention primitive
void run_norm_items(Report& r, const std::string& skip);       // smoke_norm.cpp: layer_norm / rms_norm, one warp a row
void run_nccl_items(Report& r, const std::string& skip);  // smoke_nccl.cpp, or smoke_nccl_stub.cpp without NCCL

}  // namespace dl::smoke
