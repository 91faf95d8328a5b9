// tensor/fast_sgemm.h - float32 GEMM on the library's AVX-512 register tiles (tensor/microkernel.h): the fast twin of
// OpenBLAS's sgemm for the products of linear layers, matmul and the LSTM.
//
// Why: OpenBLAS is held to its AVX2 (Haswell) kernels on these processors (OPENBLAS_CORETYPE=Haswell, which stays as
// it is; see DESIGN.md), and its sgemm runs at 180-205 GFLOP/s on two cores here. The same two cores run 512-bit
// FMAs at about twice that: the micro-kernel measured 394 GFLOP/s on (8192, 128) x (128, 512)
// (docs/performance.md, 2026-12-04).
//
// What it computes: C (M, N) = op(A) op(B) (beta 0) or C += op(A) op(B) (beta 1), row-major, op = transpose or not,
// with leading dimensions, as cblas_sgemm with alpha 1. Blocking, on the calling thread only (the caller cuts a
// large product into panels, one per thread: tensor/linalg.cpp's gemm_panels):
//   - k in chunks of kKc (256): C's rows are stored and reloaded between chunks, so each element is still one
//     running sum over k in order (the same bits for any blocking or thread count);
//   - rows in groups of kMc (96), so a group's A chunk (96 x 256 floats) stays in L2 while the column blocks sweep it;
//   - op(B) must have its rows contiguous (the vectors run along N): a transposed B (B^T stored as (N, K), e.g. a
//     linear layer's weight) is first copied to (K, N) in a block from the caching allocator, O(K N) against the
//     product's O(M N K).
//   - a transposed A (op(A) = A^T: the weight gradients dY^T X) is read one short run per k, lda floats apart; there
//     each 64-deep k chunk of A (per row group) and of op(B) (in 64-column panels) is first copied into contiguous
//     blocks that stay in L1 together (fast_sgemm.cpp, sgemm_transposed_a: the LSTM's dW_hh 16.3 -> 10.8 ms);
//   - the last N % 16 columns go to cblas_sgemm (a vector needs 16 columns).
// Each element is a plain sum over k in order, like OpenBLAS's kernel but in another grouping of the FMAs, so the two
// agree to float32 rounding, not bit for bit (tests/tensor/test_fast_sgemm.cpp: against OpenBLAS and float64 for
// every transpose pair, beta, ragged sizes and leading dimensions; thread count does not change the bits).
//
// When it runs (fast_sgemm_applies): built with AVX-512 (clang, or GCC >= 13, with -march=native on such a
// processor), at least 16 columns, and not switched off - never a condition on M, because dl::gemm's row panels depend
// on the thread count and every row must take the same kernel. DL_SGEMM=openblas in the environment switches it off for
// the whole process (to time or check the plain path); set_fast_sgemm does the same from code (tests, benchmarks).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tensor/allocator.h"

namespace dl {

// True where the AVX-512 kernel was compiled in (else every call goes to OpenBLAS).
bool fast_sgemm_compiled();
// On by default where compiled; DL_SGEMM=openblas turns it off at start. Returns the previous setting.
bool set_fast_sgemm(bool on);
bool fast_sgemm_enabled();
// Whether fast_sgemm takes this product (else the caller runs cblas_sgemm).
bool fast_sgemm_applies(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, float beta);

// C (M, N) = op(A) op(B) + beta C for beta 0 or 1 (alpha 1), on the calling thread. op(A) is (M, K): A is (M, K)
// with row stride lda, or (K, M) when ta. op(B) is (K, N): B is (K, N) with row stride ldb, or (N, K) when tb.
// With `bias` (N floats; beta 0 only) every row of C starts from it: the same bits as C = bias and beta 1.
void fast_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                float beta, float* C, int64_t ldc, const float* bias = nullptr);

// B's columns c0 .. c0 + n - 1 for each c0, copied once into contiguous (K, 64) panels (the last one narrower), for
// products repeated with the same B: the LSTM's recurrent weight at each of its steps (nn/fused/lstm_kernels.cpp).
// Read in place, B's rows are ldb floats apart - 4 KiB for W_hh^T (Hd, 4Hd) at Hd = 256 - so each k of a small
// product touched a new page and the same L1 sets, past the prefetchers; a panel is one stream, and k runs in chunks
// of 128 so a panel's chunk (32 KiB) stays in L1 while the row blocks sweep it. Each element of C is one running sum
// over k in order: the bits of fast_sgemm on the same operands (tests/tensor/test_fast_sgemm.cpp). One step's
// products per thread of the LSTM benchmark, one core of the Intel Xeon VM (2026-12-06): forward (64, 256) x
// (256, 4 x 128) 124 -> 90 us, backward (64, 1024) x (1024, 128) 103 -> 90 us.
class SgemmPanels {
 public:
  // B (K, ldb) row-major; every c0 + n <= ldb. The copy comes from the caching allocator (thread-safe).
  SgemmPanels(const float* B, int64_t ldb, int64_t K, std::vector<int64_t> c0s, int64_t n);
  // Whether panels n columns wide can be used: fast_sgemm on (otherwise dl::gemm runs OpenBLAS, whose bits differ)
  // and whole vectors (n a multiple of 16).
  static bool applies(int64_t n);
  // C[:, c0 : c0 + n] = A B[:, c0 : c0 + n] (beta 0) or += (beta 1) for each c0; A (M, K) with row stride lda, on
  // the calling thread.
  void product(int64_t M, const float* A, int64_t lda, float beta, float* C, int64_t ldc) const;

 private:
  int64_t K_, n_;
  std::vector<int64_t> c0s_;
  HostScratch<float> panels_;  // for each c0, its (K, 64) panels one after another
};

}  // namespace dl
