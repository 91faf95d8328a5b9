// tests/cuda/smoke/smoke_kernels.cpp - the four launchers of cuda/kernels.cuh on cudaMalloc'd buffers, against loops
// on the host written here from the formulas in that header:
//   fill          every element equals the value (f32, f64, i64; one partial block, one block, many blocks): exact
//   sum_last      out[r] = sum_j x[r, j] in f64 (rows of mixed signs, both block sizes): scaled error vs f64
//   softmax_last  exp(x - max) / sum exp(x - max) per row, short rows (<= 64: the 32-thread kernel) and long rows
//                 (the 256-thread kernel), inputs spread over +-20 so an unshifted exp would overflow in f32
//   complex_mul   a[i] = a[i] b[i] scale over interleaved (re, im) pairs, in place
#include <algorithm>
#include <cmath>
#include <random>

#include "cuda/kernels.cuh"
#include "tests/cuda/smoke/smoke.h"

namespace dl::smoke {
namespace {

template <class T> DType dtype_of();
template <> DType dtype_of<float>() { return DType::f32; }
template <> DType dtype_of<double>() { return DType::f64; }
template <> DType dtype_of<int64_t>() { return DType::i64; }

template <class T> std::vector<T> uniform_values(size_t n, double lo, double hi, unsigned seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = (T)u(g);
  return v;
}

template <class T> Outcome fill_item() {
  Outcome o;
  for (int64_t n : {1, 255, 100003}) {
    DeviceBuffer d(n * sizeof(T));
    cuda::launch_fill(d.get(), n, dtype_of<T>(), -3.0);
    sync_check("launch_fill");
    std::vector<T> got = d.get_as<T>(n);
    for (T x : got) o.max_err = std::max(o.max_err, std::abs((double)x - (-3.0)));
    o.detail += (o.detail.empty() ? "n " : " ") + std::to_string(n);
  }
  return o;
}

template <class T> Outcome sum_last_item() {
  Outcome o;
  o.tol = sizeof(T) == 4 ? 1e-6 : 1e-13;  // f64 accumulation: the f32 result is the rounded exact sum
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{37, 50}, {19, 10007}}) {
    std::vector<T> x = uniform_values<T>(rows * cols, -1, 1, 7);
    std::vector<double> want(rows, 0.0);
    for (int64_t r = 0; r < rows; r++)
      for (int64_t j = 0; j < cols; j++) want[r] += (double)x[r * cols + j];
    DeviceBuffer dx(x.size() * sizeof(T)), dout(rows * sizeof(T));
    dx.put(x);
    cuda::launch_sum_last(dx.get(), dout.get(), rows, cols, dtype_of<T>());
    sync_check("launch_sum_last");
    o.max_err = std::max(o.max_err, scaled_err(as_double(dout.get_as<T>(rows)), want));
    o.detail += (o.detail.empty() ? "" : ", ") + std::to_string(rows) + "x" + std::to_string(cols);
  }
  return o;
}

template <class T> Outcome softmax_last_item(int64_t rows, int64_t cols) {
  Outcome o;
  o.tol = sizeof(T) == 4 ? 1e-5 : 1e-12;
  std::vector<T> x = uniform_values<T>(rows * cols, -20, 20, 11);
  x[0] = (T)90;  // exp(90) overflows f32: only the shifted form stays finite
  std::vector<double> want(x.size());
  for (int64_t r = 0; r < rows; r++) {
    const T* row = &x[r * cols];
    double m = *std::max_element(row, row + cols), s = 0;
    for (int64_t j = 0; j < cols; j++) s += std::exp((double)row[j] - m);
    for (int64_t j = 0; j < cols; j++) want[r * cols + j] = std::exp((double)row[j] - m) / s;
  }
  DeviceBuffer dx(x.size() * sizeof(T)), dy(x.size() * sizeof(T));
  dx.put(x);
  cuda::launch_softmax_last(dx.get(), dy.get(), rows, cols, dtype_of<T>());
  sync_check("launch_softmax_last");
  o.max_err = scaled_err(as_double(dy.get_as<T>(x.size())), want);
  o.detail = std::to_string(rows) + "x" + std::to_string(cols) + (cols <= 64 ? " (32-thread rows)" : " (256-thread rows)");
  return o;
}

template <class T> Outcome complex_mul_item() {
  Outcome o;
  o.tol = sizeof(T) == 4 ? 1e-6 : 1e-14;
  const int64_t n = 100001;  // complex numbers
  const double scale = 0.37;
  std::vector<T> a = uniform_values<T>(2 * n, -2, 2, 3), b = uniform_values<T>(2 * n, -2, 2, 5);
  std::vector<double> want(2 * n);
  for (int64_t i = 0; i < n; i++) {
    const double ar = a[2 * i], ai = a[2 * i + 1], br = b[2 * i], bi = b[2 * i + 1];
    want[2 * i] = (ar * br - ai * bi) * scale, want[2 * i + 1] = (ar * bi + ai * br) * scale;
  }
  DeviceBuffer da(a.size() * sizeof(T)), db(b.size() * sizeof(T));
  da.put(a), db.put(b);
  cuda::launch_complex_mul(da.get(), db.get(), n, scale, dtype_of<T>());
  sync_check("launch_complex_mul");
  o.max_err = scaled_err(as_double(da.get_as<T>(2 * n)), want);
  o.detail = "n " + std::to_string(n) + ", scale " + std::to_string(scale);
  return o;
}

}  // namespace

void run_kernel_items(Report& r, const std::string& skip) {
  r.run("kernel.fill.f32", fill_item<float>, skip);
  r.run("kernel.fill.f64", fill_item<double>, skip);
  r.run("kernel.fill.i64", fill_item<int64_t>, skip);
  r.run("kernel.sum_last.f32", sum_last_item<float>, skip);
  r.run("kernel.sum_last.f64", sum_last_item<double>, skip);
  r.run("kernel.softmax_last.short.f32", [] { return softmax_last_item<float>(301, 40); }, skip);
  r.run("kernel.softmax_last.short.f64", [] { return softmax_last_item<double>(301, 40); }, skip);
  r.run("kernel.softmax_last.long.f32", [] { return softmax_last_item<float>(23, 5003); }, skip);
  r.run("kernel.softmax_last.long.f64", [] { return softmax_last_item<double>(23, 5003); }, skip);
  r.run("kernel.complex_mul.f32", complex_mul_item<float>, skip);
  r.run("kernel.complex_mul.f64", complex_mul_item<double>, skip);
}

}  // namespace dl::smoke
