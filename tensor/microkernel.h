// tensor/microkernel.h - the register-tiled float32 product C (M, N) (+)= A (M, K) B (K, N) that the library's own
// products run on: the blocked attention's tiles (nn/fused/flash_attention.cpp) and the AVX-512 sgemm
// (tensor/fast_sgemm.h).
//
// A block of R rows x W vectors of C stays in registers for the whole k loop: per k, W loads of B's row k, R
// broadcasts of A(r, k) and R W fused multiply-adds. R W = 24 accumulators of the 32 AVX-512 registers (6 x 4, 12 x 2,
// 12 x 1), or of AVX2's 16 (6 x 2 ... in rows_for). A is read through strides, A(r, k) = a[r ars + k aks], so a
// transposed A costs no copy; B is row-major with leading dimension ldb (its rows hold the vectors); C row-major.
// Each element of C is one running sum over k in order, so a product cut into row or column blocks, or into
// k chunks that store and reload C in between (kAcc), gives the same bits as the whole product.
#pragma once
#include <algorithm>
#include <cstdint>

namespace dl::micro {

#if defined(__AVX512F__)
constexpr int kV = 16, kRegs = 32, kMaxW = 4;  // floats per vector, vector registers, widest column block
#else
constexpr int kV = 8, kRegs = 16, kMaxW = 2;  // AVX2
#endif
typedef float vf __attribute__((vector_size(kV * sizeof(float)), aligned(sizeof(float)), may_alias));
#if defined(__clang__)  // clang tunes -march=native to 256-bit vectors; the kernels ask for the 512-bit registers
#define DL_WIDE_VECTORS __attribute__((min_vector_width(dl::micro::kV * 32)))
#define DL_VECTORIZE_WIDE _Pragma("clang loop vectorize_width(16)")  // a softmax loop on 16 floats too
#else
#define DL_WIDE_VECTORS
#define DL_VECTORIZE_WIDE
#endif
constexpr int rows_for(int W) { return std::min(12, (kRegs - W - 2) / W); }  // 6 x 4, 12 x 2, 12 x 1 (AVX-512)

// kAcc false starts from zero, or from the row vector `bias` (W kV floats, the same for every row) where one is given.
template <int R, int W, bool kAcc>
DL_WIDE_VECTORS inline void block(int64_t K, const float* a, int64_t ars, int64_t aks, const float* b, int64_t ldb, float* c,
                                  int64_t ldc, const float* bias) {
  vf acc[R][W];
#pragma GCC unroll 16
  for (int r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int w = 0; w < W; w++) acc[r][w] = kAcc ? *(const vf*)(c + r * ldc + w * kV) : bias ? *(const vf*)(bias + w * kV) : vf{};
  for (int64_t k = 0; k < K; k++) {
    vf bk[W];
#pragma GCC unroll 4
    for (int w = 0; w < W; w++) bk[w] = *(const vf*)(b + k * ldb + w * kV);
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) {
      const float ark = a[r * ars + k * aks];
#pragma GCC unroll 4
      for (int w = 0; w < W; w++) acc[r][w] += ark * bk[w];
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int w = 0; w < W; w++) *(vf*)(c + r * ldc + w * kV) = acc[r][w];
}

// M rows in blocks of R; the last M % R rows by the kernels for R - 1, R - 2, ... rows (one block each at most).
template <int R, int W, bool kAcc>
void row_blocks(int64_t M, int64_t K, const float* a, int64_t ars, int64_t aks, const float* b, int64_t ldb, float* c,
                int64_t ldc, const float* bias) {
  int64_t i = 0;
  for (; i + R <= M; i += R) block<R, W, kAcc>(K, a + i * ars, ars, aks, b, ldb, c + i * ldc, ldc, bias);
  if constexpr (R > 1)
    if (i < M) row_blocks<R - 1, W, kAcc>(M - i, K, a + i * ars, ars, aks, b, ldb, c + i * ldc, ldc, bias);
}

// C (M, N) = A B (kAcc false; rows start from `bias` (N floats) where one is given) or C += A B (kAcc true); N a
// multiple of kV; B and C row-major with ldb, ldc.
template <bool kAcc>
void gemm(int64_t M, int64_t N, int64_t K, const float* a, int64_t ars, int64_t aks, const float* b, int64_t ldb, float* c,
          int64_t ldc, const float* bias = nullptr) {
  auto at = [bias](int64_t j) { return bias ? bias + j : nullptr; };
  int64_t j = 0;
  if constexpr (kMaxW == 4)
    for (; j + 4 * kV <= N; j += 4 * kV) row_blocks<rows_for(4), 4, kAcc>(M, K, a, ars, aks, b + j, ldb, c + j, ldc, at(j));
  for (; j + 2 * kV <= N; j += 2 * kV) row_blocks<rows_for(2), 2, kAcc>(M, K, a, ars, aks, b + j, ldb, c + j, ldc, at(j));
  for (; j + kV <= N; j += kV) row_blocks<rows_for(1), 1, kAcc>(M, K, a, ars, aks, b + j, ldb, c + j, ldc, at(j));
}

}  // namespace dl::micro
