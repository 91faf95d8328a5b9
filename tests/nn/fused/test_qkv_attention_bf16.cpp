// tests/nn/fused/test_qkv_attention_bf16.cpp - the packed attention for short sequences (nn/fused/qkv_attention.cpp) in
// bf16: under Precision::bf16 where the CPU computes in bf16, its five products run on tensor/bf16_gemm.h with the
// operands the blocked attention rounds (Q' = c Q, K, V, dO; Pd for O and dV; dS for dQ and dK) and float32 sums.
// Checked against the float64 reference of the rounded operands and its error bound (bf16_attention_reference.h). One
// difference from the blocked path, inside that bound: D_t = sum_s P_ts dP_ts is summed from the product dPd = dO V^T of
// the rounded dO, where the blocked path takes dO . O in float32; the two differ by at most u sum_s p_ts |dy_t . v_s|
// <= sum_e |dy_te| tol(O_te), a term the bound's |dD_t| already holds.
// Cases: T = 7, 50, 95 (the layer takes this path below T = 96), HS = 5, 16, 32, 64, causal or not, key padding (a
// sequence with no real key), prefix-LM. Also: one and two threads give the same bits; agreement with the float32 path
// and with the blocked attention in bf16, dropout included.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>

#include "bf16_attention_reference.h"
#include "bf16_kernels.h"
#include "nn/fused/flash_attention.h"
#include "nn/fused/qkv_attention.h"
#include "op_harness.h"
#include "tensor/bf16.h"

using namespace dl;
using namespace dl::nn;
using namespace dl::test::bf16_attention;

namespace {

#define SKIP_WITHOUT_BF16() \
  if (!bf16_gemm_usable()) GTEST_SKIP() << "no bf16 arithmetic here: " << precision_note()

// Runs the packed (or, with blocked, the blocked) primitive at precision p; returns out (B, T, C) and dqkv (B, T, 3C).
std::pair<Tensor, Tensor> run(const Case& c, const Inputs& in, Precision p, double drop = 0, bool blocked = false) {
  const test::PrecisionScope precision(p);
  Var qkv(in.qkv, true);
  Tensor km = c.mask ? from_vector(key_mask(c.T), {kB, c.T}) : Tensor();
  Tensor pre = c.prefix ? from_vector(prefixes(c.T), {kB}) : Tensor();
  Generator g(7);
  Var y = blocked ? flash_attention(qkv, kNH, c.causal, drop, true, g, km, pre)
                  : qkv_attention(qkv, kNH, c.causal, drop, true, g, km, pre);
  y.backward(in.dy);
  return {y.data().contiguous(), qkv.grad().contiguous()};
}

// ||a - b|| / ||b||
double rel(const Tensor& a, const Tensor& b) {
  const float *x = a.data<float>(), *y = b.data<float>();
  double num = 0, den = 0;
  for (int64_t i = 0; i < a.numel(); i++) num += ((double)x[i] - y[i]) * ((double)x[i] - y[i]), den += (double)y[i] * y[i];
  return std::sqrt(num / den);
}

TEST(QkvAttentionBf16, AgainstFloat64OfTheRoundedOperands) {
  SKIP_WITHOUT_BF16();
  for (int kernel : test::bf16_kernels()) {  // VDPBF16PS tiles, and AMX where usable
    SCOPED_TRACE(test::bf16_kernel_name(kernel));
    test::UseBf16Kernel use(kernel);
    for (int64_t T : {7, 50, 95})
      for (int64_t HS : {5, 16, 32, 64})
        for (bool causal : {false, true})
          for (bool mask : {false, true})
            for (bool prefix : {false, true}) {
              const Case c{T, HS, causal, mask, prefix};
              const Inputs in = inputs(c);
              auto [out, dqkv] = run(c, in, Precision::bf16);
              expect_every_head(c, in, out, dqkv);
            }
  }
}

TEST(QkvAttentionBf16, ResultDoesNotDependOnThreadCount) {
  SKIP_WITHOUT_BF16();
  for (const Case& c : {Case{95, 32, true, true, false}, Case{50, 64, false, false, true}}) {
    const Inputs in = inputs(c);
    omp_set_num_threads(1);
    auto [o1, g1] = run(c, in, Precision::bf16, 0.1);
    omp_set_num_threads(2);
    auto [o2, g2] = run(c, in, Precision::bf16, 0.1);
    EXPECT_TRUE(dl::test::all_close(o1, o2, {0, 0}, c.what() + " out, 1 vs 2 threads"));
    EXPECT_TRUE(dl::test::all_close(g1, g2, {0, 0}, c.what() + " dqkv, 1 vs 2 threads"));
  }
}

// Within bf16 accuracy (about 2^-8 relative; 0.01 leaves room) of the float32 path and of the blocked attention in bf16
// (the same operands rounded, but the blocked path rounds P before dividing by l and sums D differently: not the same
// bits), with and without dropout; and not equal to the float32 path (the bf16 products ran).
TEST(QkvAttentionBf16, AgreesWithFloat32AndWithTheBlockedPath) {
  SKIP_WITHOUT_BF16();
  for (const Case& c : {Case{95, 32, true, true, false}, Case{50, 16, false, true, true}, Case{61, 24, false, false, false},
                        Case{33, 5, true, false, false}})
    for (double p : {0.0, 0.2}) {
      const Inputs in = inputs(c);
      auto [o16, g16] = run(c, in, Precision::bf16, p);
      auto [o32, g32] = run(c, in, Precision::fp32, p);
      auto [ob, gb] = run(c, in, Precision::bf16, p, /*blocked=*/true);
      const std::string what = c.what() + " p=" + std::to_string(p);
      EXPECT_LT(rel(o16, o32), 0.01) << what << " out vs float32";
      EXPECT_LT(rel(g16, g32), 0.01) << what << " dqkv vs float32";
      EXPECT_GT(rel(o16, o32), 0.0) << what << ": the bf16 products did not run";
      EXPECT_LT(rel(o16, ob), 0.01) << what << " out vs the blocked bf16 path";
      EXPECT_LT(rel(g16, gb), 0.01) << what << " dqkv vs the blocked bf16 path";
    }
}

}  // namespace
