// tests/cuda/test_cuda.cpp - the CUDA backend agrees with the CPU, op by op.
//
// The CPU is the reference. Where tensor/ has the CPU kernel (fill, every unary op, add/sub/mul/div, sum,
// softmax) the test runs it on the same input; for matmul and fft_conv it computes the obvious float64
// loop here (naive batched matmul, direct causal convolution).
// Every test skips with "no CUDA device" when the build has no CUDA backend or the machine no GPU, except
// NoDeviceErrorNamesTheOp, which runs exactly then and checks the error a user sees.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "tensor/backend.h"
#include "tensor/ops.h"
#include "tolerance.h"
#include "op_harness.h"

namespace dl {
namespace {

using test::all_close;
using test::Tol;

using test::cuda_ready;
Backend& gpu() { return *device_backend(Device::cuda); }


Tensor dev(const Tensor& t) { return t.to(Device::cuda); }
Tensor host(const Tensor& t) { return t.to(Device::cpu); }
Tol agree(DType t) { return t == DType::f64 ? test::kAgreeF64 : test::kAgreeF32; }
// Long reductions (matmul over K, FFTs): f32 rounding grows with the length; f64 stays tight.
Tol agree_long(DType t) { return t == DType::f64 ? test::kAgreeF64 : test::kFixtureLong; }

// ---------------------------------------------------------------------------------------------
TEST(Cuda, NoDeviceErrorNamesTheOp) {
  if (cuda_ready()) GTEST_SKIP() << "a CUDA device is present; this test checks the error a machine without one gives";
  auto expect_error = [](auto&& make, const std::string& what) {
    try {
      make();
      ADD_FAILURE() << what << ": expected an error without a CUDA device";
    } catch (const ShapeError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("alloc"), std::string::npos) << what << ": message does not name the op: " << m;
      EXPECT_NE(m.find("cuda"), std::string::npos) << what << ": message does not name the device: " << m;
    }
  };
  expect_error([] { Tensor::empty({2, 3}, DType::f32, Device::cuda); }, "Tensor::empty");
  expect_error([] { zeros({4}, DType::f32, Device::cuda); }, "zeros");
  expect_error([] { randn({3, 3}).to(Device::cuda); }, "to(cuda)");
}

TEST(Cuda, CopyRoundTrip) {
  SKIP_WITHOUT_CUDA();
  Generator g(1);
  for (DType t : {DType::f32, DType::f64}) {
    Tensor x = randn({37, 129}, g, t);
    EXPECT_TRUE(all_close(host(dev(x)), x, {0, 0}, std::string("round trip ") + dtype_name(t)));
    EXPECT_TRUE(all_close(host(dev(x).clone()), x, {0, 0}, std::string("clone on device ") + dtype_name(t)));
    Tensor xt = x.transpose(0, 1);  // non-contiguous on the host: to() makes it contiguous first
    EXPECT_TRUE(all_close(host(dev(xt)), xt, {0, 0}, std::string("transposed round trip ") + dtype_name(t)));
  }
  Tensor i = randint(-1000, 1000, {1001}, g);
  EXPECT_TRUE(all_close(host(dev(i)), i, {0, 0}, "round trip i64"));
  Tensor e = Tensor::empty({0, 5});
  EXPECT_EQ(host(dev(e)).shape(), (Shape{0, 5}));
  EXPECT_EQ(dev(i).device(), Device::cuda);
}

TEST(Cuda, Fill) {
  SKIP_WITHOUT_CUDA();
  for (DType t : {DType::f32, DType::f64, DType::i64}) {
    for (int64_t n : {1, 255, 100003}) {  // one partial block, one block, many blocks
      Tensor y = full({n}, -3.0, t, Device::cuda);
      EXPECT_TRUE(all_close(host(y), full({n}, -3.0, t), {0, 0}, std::string("full ") + dtype_name(t)));
      y.fill_(2.5);
      EXPECT_TRUE(all_close(host(y), full({n}, 2.5, t), {0, 0}, std::string("fill_ ") + dtype_name(t)));
    }
  }
}

// Every UnaryOp with an input inside its domain; scale 8 puts some softplus inputs past its threshold 20
// and some gelu/sigmoid inputs far into their tails.
struct UnaryCase {
  UnaryOp op;
  const char* name;
  bool positive;
};
// clang-format off
const std::vector<UnaryCase> kUnaryCases = {
    {UnaryOp::neg, "neg", false},        {UnaryOp::exp, "exp", false},         {UnaryOp::log, "log", true},
    {UnaryOp::sqrt, "sqrt", true},       {UnaryOp::rsqrt, "rsqrt", true},      {UnaryOp::abs, "abs", false},
    {UnaryOp::tanh, "tanh", false},      {UnaryOp::sigmoid, "sigmoid", false}, {UnaryOp::relu, "relu", false},
    {UnaryOp::gelu_erf, "gelu_erf", false}, {UnaryOp::gelu_tanh, "gelu_tanh", false}, {UnaryOp::silu, "silu", false},
    {UnaryOp::softplus, "softplus", false},
};
// clang-format on

TEST(Cuda, UnaryMatchesCpu) {
  SKIP_WITHOUT_CUDA();
  Generator g(2);
  for (DType t : {DType::f32, DType::f64}) {
    for (const UnaryCase& c : kUnaryCases) {
      Tensor x =
          c.positive ? uniform({33, 1031}, 0.01, 10.0, g, t) : normal({33, 1031}, 0.0, c.op == UnaryOp::exp ? 3.0 : 8.0, g, t);
      Tensor expected = unary(c.op, x);
      Tensor actual = unary(c.op, dev(x));  // dispatches through tensor/elementwise.cpp to the backend
      ASSERT_EQ(actual.device(), Device::cuda);
      EXPECT_TRUE(all_close(host(actual), expected, agree(t), std::string(c.name) + " " + dtype_name(t)));
    }
  }
}

TEST(Cuda, BinaryMatchesCpu) {
  SKIP_WITHOUT_CUDA();
  Generator g(3);
  for (DType t : {DType::f32, DType::f64}) {
    Tensor a = randn({17, 4099}, g, t), b = randn({17, 4099}, g, t);
    Tensor bpos = uniform({17, 4099}, 0.5, 2.0, g, t);  // a divisor away from zero
    Tensor da = dev(a), db = dev(b), dbpos = dev(bpos);
    std::string d = dtype_name(t);
    EXPECT_TRUE(all_close(host(add(da, db)), add(a, b), agree(t), "add " + d));
    EXPECT_TRUE(all_close(host(sub(da, db)), sub(a, b), agree(t), "sub " + d));
    EXPECT_TRUE(all_close(host(mul(da, db)), mul(a, b), agree(t), "mul " + d));
    EXPECT_TRUE(all_close(host(div(da, dbpos)), div(a, bpos), agree(t), "div " + d));
    EXPECT_TRUE(all_close(host(add(da, da)), add(a, a), agree(t), "add aliased " + d));
  }
  Tensor i = randint(-50, 50, {1000}, g), j = randint(-50, 50, {1000}, g);
  EXPECT_TRUE(all_close(host(add(dev(i), dev(j))), add(i, j), {0, 0}, "add i64"));
  EXPECT_TRUE(all_close(host(mul(dev(i), dev(j))), mul(i, j), {0, 0}, "mul i64"));
}

// out(B, M, N) = a(B, M, K) @ b(B, K, N) in float64 loops; b of rank 2 is shared by every batch.
Tensor matmul_reference(const Tensor& a, const Tensor& b) {
  int64_t B = a.size(0), M = a.size(1), K = a.size(2), N = b.size(-1);
  bool shared = b.dim() == 2;
  Tensor A = a.to(DType::f64).contiguous(), Bm = b.to(DType::f64).contiguous(), out = zeros({B, M, N}, DType::f64);
  const double *pa = A.data<double>(), *pb = Bm.data<double>();
  double* po = out.data<double>();
  for (int64_t z = 0; z < B; z++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t k = 0; k < K; k++) {
        double av = pa[(z * M + i) * K + k];
        const double* brow = pb + ((shared ? 0 : z) * K + k) * N;
        for (int64_t j = 0; j < N; j++) po[(z * M + i) * N + j] += av * brow[j];
      }
  return out.to(a.dtype());
}

TEST(Cuda, MatmulMatchesCpu) {
  SKIP_WITHOUT_CUDA();
  Generator g(4);
  struct Dims {
    int64_t B, M, K, N;
  };
  for (DType t : {DType::f32, DType::f64}) {
    for (Dims s : {Dims{1, 1, 1, 1}, Dims{3, 17, 33, 9}, Dims{2, 64, 128, 31}, Dims{4, 5, 300, 7}, Dims{1, 129, 65, 257}}) {
      Tensor a = randn({s.B, s.M, s.K}, g, t), b = randn({s.B, s.K, s.N}, g, t);
      Tensor out = Tensor::empty({s.B, s.M, s.N}, t, Device::cuda);
      gpu().matmul(dev(a), dev(b), out);
      EXPECT_TRUE(all_close(host(out), matmul_reference(a, b), agree_long(t),
                            "matmul " + shape_str({s.B, s.M, s.K, s.N}) + " " + dtype_name(t)));
    }
    // a rank-2 b is broadcast over a's batch (zero stride in cuBLAS)
    Tensor a = randn({3, 7, 11}, g, t), w = randn({11, 5}, g, t);
    Tensor out = Tensor::empty({3, 7, 5}, t, Device::cuda);
    gpu().matmul(dev(a), dev(w), out);
    EXPECT_TRUE(all_close(host(out), matmul_reference(a, w), agree_long(t), std::string("matmul shared b ") + dtype_name(t)));
  }
}

TEST(Cuda, MatmulRejectsBadShapes) {
  SKIP_WITHOUT_CUDA();
  Tensor a = zeros({2, 3, 4}, DType::f32, Device::cuda), b = zeros({2, 5, 6}, DType::f32, Device::cuda);
  Tensor out = Tensor::empty({2, 3, 6}, DType::f32, Device::cuda);
  try {
    gpu().matmul(a, b, out);
    ADD_FAILURE() << "matmul of [2, 3, 4] and [2, 5, 6] should throw";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("matmul"), std::string::npos) << e.what();
  }
}

// Row shapes around the kernel's switch from 32 to 256 threads per row (64), and a long row.
const std::vector<Shape> kRowShapes = {{7, 1}, {5, 33}, {3, 64}, {4, 65}, {6, 1000}, {2, 100003}, {1000, 20}};

TEST(Cuda, SumLastMatchesCpu) {
  SKIP_WITHOUT_CUDA();
  Generator g(5);
  for (DType t : {DType::f32, DType::f64}) {
    for (const Shape& s : kRowShapes) {
      Tensor x = randn(s, g, t);
      Tensor expected = sum(x, {-1});  // the CPU kernel (tensor/reduce.cpp)
      Tensor out = Tensor::empty({s[0]}, t, Device::cuda);
      gpu().sum_last(dev(x), out);
      // both accumulate in f64, so only the final rounding to f32 differs
      std::string what = "sum_last " + shape_str(s) + " " + dtype_name(t);
      EXPECT_TRUE(all_close(host(out), expected, agree(t), what));
      if (t == DType::f32) {  // the Tensor-level op reaches the backend for f32 (tensor/reduce.cpp's seam)
        EXPECT_TRUE(all_close(host(sum(dev(x), {-1})), expected, agree(t), "sum(x, {-1}) on device, " + what));
      }
    }
  }
}

TEST(Cuda, SoftmaxLastMatchesCpu) {
  SKIP_WITHOUT_CUDA();
  Generator g(6);
  for (DType t : {DType::f32, DType::f64}) {
    for (const Shape& s : kRowShapes) {
      Tensor x = normal(s, 0.0, 30.0, g, t);  // large logits: exp(x) alone would overflow f32
      Tensor expected = softmax(x, -1);       // the CPU kernel (tensor/nn_kernels.cpp)
      Tensor out = Tensor::empty(s, t, Device::cuda);
      gpu().softmax_last(dev(x), out);
      std::string what = "softmax_last " + shape_str(s) + " " + dtype_name(t);
      EXPECT_TRUE(all_close(host(out), expected, agree(t), what));
      if (t == DType::f32) {  // the Tensor-level op reaches the backend for f32 (tensor/nn_kernels.cpp's seam)
        EXPECT_TRUE(all_close(host(softmax(dev(x), -1)), expected, agree(t), "softmax(x, -1) on device, " + what));
      }
    }
  }
}

// out[r, t] = sum_{s <= t} a[r, s] b[r, t - s], the direct causal convolution, in float64.
Tensor causal_conv_reference(const Tensor& a, const Tensor& b) {
  int64_t R = a.size(0), L = a.size(1);
  Tensor A = a.to(DType::f64), Bk = b.to(DType::f64), out = zeros({R, L}, DType::f64);
  const double *pa = A.data<double>(), *pb = Bk.data<double>();
  double* po = out.data<double>();
  for (int64_t r = 0; r < R; r++)
    for (int64_t i = 0; i < L; i++) {
      double acc = 0;
      for (int64_t s = 0; s <= i; s++) acc += pa[r * L + s] * pb[r * L + i - s];
      po[r * L + i] = acc;
    }
  return out.to(a.dtype());
}

TEST(Cuda, FftConvMatchesDirectConvolution) {
  SKIP_WITHOUT_CUDA();
  Generator g(7);
  for (DType t : {DType::f32, DType::f64}) {
    for (int64_t L : {1, 7, 128, 300}) {
      int64_t R = 6;
      Tensor a = randn({R, L}, g, t);
      // a decaying kernel, like an S4 kernel: b[t] ~ N(0, 1) exp(-t / 30)
      Tensor b = mul(randn({R, L}, g, t), exp(mul_scalar(arange(0.0, (double)L, 1.0, t), -1.0 / 30.0)).reshape({1, L}));
      Tensor out = Tensor::empty({R, L}, t, Device::cuda);
      gpu().fft_conv(dev(a), dev(b), out);
      EXPECT_TRUE(all_close(host(out), causal_conv_reference(a, b), agree_long(t),
                            "fft_conv L=" + std::to_string(L) + " " + dtype_name(t)));
      // the plan for (2L, R) is cached now; a second call must give the same numbers
      Tensor again = Tensor::empty({R, L}, t, Device::cuda);
      gpu().fft_conv(dev(a), dev(b), again);
      EXPECT_TRUE(all_close(host(again), host(out), {0, 0}, "fft_conv with a cached plan"));
    }
  }
}

TEST(Cuda, AllocatorReusesFreedBlocks) {
  SKIP_WITHOUT_CUDA();
  void* p = gpu().alloc(1000);
  gpu().free(p, 1000);
  void* q = gpu().alloc(1000);
  EXPECT_EQ(q, p) << "a freed block of the same size should come back from the cache";
  gpu().free(q, 1000);
  const void* first;
  {
    Tensor t = Tensor::empty({3, 1000}, DType::f32, Device::cuda);
    first = t.raw_data();
  }
  Tensor u = Tensor::empty({3, 1000}, DType::f32, Device::cuda);
  EXPECT_EQ(u.raw_data(), first) << "a tensor's storage should be reused after it is freed";
}

}  // namespace
}  // namespace dl
