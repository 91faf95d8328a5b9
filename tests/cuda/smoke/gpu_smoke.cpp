// tests/cuda/smoke/gpu_smoke.cpp - the smoke driver: every piece of device library code once against a host
// reference, one line per item (smoke.h), before any test binary runs. scripts/gpu_check.sh runs it first.
//
//   gpu_smoke [--tsv FILE] [--only PREFIX]   FILE gets one row per item: item, status, max_err, tol, ms, detail;
//                                             PREFIX runs only the items named so (e.g. kernel. under racecheck)
//
// First, with or without a device, `libraries`: cuBLAS, cuFFT and NCCL opened the way the backend opens them on first
// use (cuda/lazy_libs.h), with their versions and files, so a machine that lacks one is named before anything runs.
// Without a device every other item is reported "skipped: no device (<the driver's reason>)" and the exit status is 0
// unless a library failed to open; with one, the exit status is 1 when any item FAILED. Families (each in its own
// file): the raw kernels of cuda/kernels.cuh, cuBLAS GEMM per transpose pair and the backend's matmul, the cuFFT
// causal convolution, the caching allocator, single-rank NCCL.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "cuda/lazy_libs.h"
#include "tensor/backend.h"
#include "tests/cuda/smoke/smoke.h"

namespace dl::smoke {

Report::Report(const std::string& tsv_path, const std::string& only) : only_(only) {
  if (tsv_path.empty()) return;
  tsv_ = std::fopen(tsv_path.c_str(), "w");
  if (!tsv_) throw std::runtime_error("gpu_smoke: cannot write the TSV '" + tsv_path + "': " + std::strerror(errno));
  std::fprintf(tsv_, "item\tstatus\tmax_err\ttol\tms\tdetail\n");
}

Report::~Report() {
  if (tsv_) std::fclose(tsv_);
}

void Report::line(const char* status, const std::string& name, double err, double tol, double ms, const std::string& detail) {
  const bool skip = std::strcmp(status, "SKIP") == 0;  // nothing ran: no error, tolerance or time to show
  if (skip) std::printf("%-4s  %-34s %s\n", status, name.c_str(), detail.c_str());
  else std::printf("%-4s  %-34s max_err %-10.3g tol %-8.2g %9.2f ms  %s\n", status, name.c_str(), err, tol, ms, detail.c_str());
  std::fflush(stdout);
  if (!tsv_) return;
  std::string d = detail;  // one row per item: no tabs or newlines inside a field
  for (char& c : d)
    if (c == '\t' || c == '\n') c = ' ';
  if (skip) std::fprintf(tsv_, "%s\t%s\t\t\t\t%s\n", name.c_str(), status, d.c_str());
  else std::fprintf(tsv_, "%s\t%s\t%.3g\t%.2g\t%.3f\t%s\n", name.c_str(), status, err, tol, ms, d.c_str());
  std::fflush(tsv_);
}

void Report::run(const std::string& name, const std::function<Outcome()>& item, const std::string& skip_reason) {
  if (name.rfind(only_, 0) != 0) return;  // not selected by --only
  if (!skip_reason.empty()) {
    skipped_++;
    line("SKIP", name, 0, 0, 0, skip_reason);
    return;
  }
  auto t0 = std::chrono::steady_clock::now();
  auto ms = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(); };
  try {
    Outcome o = item();
    const bool ok = o.pass();
    (ok ? passed_ : failed_)++;
    line(ok ? "PASS" : "FAIL", name, o.max_err, o.tol, ms(), o.detail);
  } catch (const Skip& e) {
    skipped_++;
    line("SKIP", name, 0, 0, ms(), e.what());
  } catch (const std::exception& e) {
    failed_++;
    line("FAIL", name, 0, 0, ms(), std::string("error: ") + e.what());
  }
}

void cuda_check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(call) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

void sync_check(const char* what) {
  cuda_check(cudaGetLastError(), what);
  cuda_check(cudaDeviceSynchronize(), what);
}

double scaled_err(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size())
    throw std::runtime_error("compared " + std::to_string(got.size()) + " values with " + std::to_string(want.size()));
  double scale = 1, err = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < got.size(); i++) {
    const double d = std::abs(got[i] - want[i]);
    err = std::max(err, d != d ? INFINITY : d);  // a NaN is an infinite error, never a silent pass
  }
  return err / scale;
}

std::vector<double> f64_values(const Tensor& t) {
  Tensor h = t.to(Device::cpu).to(DType::f64).contiguous();
  return std::vector<double>(h.data<double>(), h.data<double>() + h.numel());
}

std::vector<double> f64_values(const std::vector<Tensor>& ts) {
  std::vector<double> v;
  for (const Tensor& t : ts)
    if (t.defined()) {
      const std::vector<double> part = f64_values(t);
      v.insert(v.end(), part.begin(), part.end());
    }
  return v;
}

}  // namespace dl::smoke

namespace {

void usage(std::FILE* f) {
  std::fprintf(f,
               "usage: gpu_smoke [--tsv FILE] [--only PREFIX]\n"
               "Runs each piece of device library code once against a host reference: the raw kernels, cuBLAS GEMM\n"
               "per transpose pair and the backend's matmul, the cuFFT causal convolution, the caching allocator and\n"
               "single-rank NCCL. One line per item (PASS / FAIL / SKIP, max error, time); --tsv also writes them as\n"
               "a table; --only runs the items whose name starts with PREFIX (libraries, kernel., cublas., backend., attention., norm.,\n"
               "cufft., alloc., nccl.). Exit status 1 when an item failed; without a device every item but libraries\n"
               "(cuBLAS, cuFFT, NCCL opened, their versions) is skipped.\n");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace dl;
  std::string tsv, only;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    }
    if ((a == "--tsv" || a == "--only") && i + 1 < argc) {
      (a == "--tsv" ? tsv : only) = argv[++i];
    } else {
      std::fprintf(stderr, "gpu_smoke: unknown argument '%s'%s\n", a.c_str(),
                   a == "--tsv" || a == "--only" ? " (it needs a value)" : "");
      usage(stderr);
      return 2;
    }
  }
  try {
    smoke::Report r(tsv, only);
    Backend* b = device_backend(Device::cuda);
    std::string skip;
    if (!b) skip = "skipped: no device (this build has no CUDA backend)";
    else if (!b->available()) skip = "skipped: no device (" + b->unavailable_reason() + ")";
    if (skip.empty()) {  // the device's name; a failure here is printed, and every item still runs and reports
      cudaDeviceProp p{};
      int driver = 0, runtime = 0;
      cudaDriverGetVersion(&driver), cudaRuntimeGetVersion(&runtime);
      const cudaError_t e = cudaGetDeviceProperties(&p, 0);
      if (e == cudaSuccess)
        std::printf("gpu_smoke: %s, sm_%d%d, %.1f GiB, driver API %d, runtime %d (static)\n", p.name, p.major, p.minor,
                    p.totalGlobalMem / 1073741824.0, driver, runtime);
      else
        std::printf("gpu_smoke: cudaGetDeviceProperties: %s (driver API %d, runtime %d)\n", cudaGetErrorString(e), driver, runtime);
    } else {
      std::printf("gpu_smoke: %s\n", skip.c_str());
    }
    r.run("libraries", [] {  // no device needed: the libraries open, or the item fails naming the one that does not
      smoke::Outcome o;
      for (const std::string& line : cuda::library_report()) o.detail += (o.detail.empty() ? "" : "; ") + line;
      return o;
    });
    smoke::run_kernel_items(r, skip);
    smoke::run_blas_items(r, skip);
    smoke::run_fft_items(r, skip);
    smoke::run_alloc_items(r, skip);
    smoke::run_attention_items(r, skip);
    smoke::run_norm_items(r, skip);
    smoke::run_nccl_items(r, skip);
    std::printf("gpu_smoke: %d passed, %d failed, %d skipped\n", r.passed(), r.failed(), r.skipped());
    return r.failed() > 0 ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_smoke: %s\n", e.what());
    return 1;
  }
}
