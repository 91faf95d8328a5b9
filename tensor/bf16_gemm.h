// tensor/bf16_gemm.h - the bf16 GEMM on the CPU: C (M, N) (+)= op(A) op(B) with A and B rounded to bfloat16 and the
// sums in float32, on the AVX512_BF16 dot-product instruction VDPBF16PS (intrinsic _mm512_dpbf16_ps).
//
// What VDPBF16PS does: for each of 16 float32 lanes, acc += a0 b0 + a1 b1, where (a0, a1) and (b0, b1) are the two
// bf16 halves of the lane's 32-bit word. A product of two bf16 numbers is exact in float32 (8 x 8 significant bits),
// so the only roundings are the float32 additions, as in the float32 GEMM; bf16 denormal inputs count as zero and
// denormal results are flushed (the instruction's fixed DAZ/FTZ). Per instruction it does twice the multiply-adds of
// an FMA on the same width.
//
// Layout (packing, once per operand per call, round to nearest even as tensor/bf16.h, with the vectorized packings of
// tensor/bf16_tiles.h): K is taken in pairs, kp = k / 2.
//   Ap          word (i, kp) = [bf16 op(A)(i, 2 kp) | bf16 op(A)(i, 2 kp + 1) << 16]   broadcast to all 16 lanes
//   Bp (Kp, Np) word (kp, j) = [bf16 op(B)(2 kp, j) | bf16 op(B)(2 kp + 1, j) << 16]   16 columns per vector
// Ap is stored the way op(A) is read cheaply: (M, Kp) for A (M, K), and (Kp, M) for a transposed A (K, M) - two rows of
// A interleaved, so the packing reads and writes contiguously - and the tiles read it through strides (ars, aks). An
// odd K gets a zero partner; Np is N rounded up to 16 with zero columns, and C's last vector is stored under a mask,
// so ragged N costs nothing extra. A transposed B (N, K) is packed 16 rows at a time through a small block.
//
// Tiles: as tensor/microkernel.h, a block of R rows x W vectors of C stays in registers for the whole k loop (R W of
// the 32 zmm registers); per pair kp, W loads of Bp's row, R broadcasts of Ap and R W VDPBF16PS. k in chunks of
// kKc pairs (C stored and reloaded in between: exact), rows in groups of kMc. Each C element is one running float32 sum
// over the pairs in order, so neither the tile, the row/column panels nor the thread count changes its bits.
//
// The tile shape is chosen once per process from CPUID (bf16_gemm_path says which); the benchmark measured the shapes
// on a Zen 4 (docs/performance.md, "bfloat16"). Built only with clang or GCC >= 13 (GCC 12 miscompiles AVX-512 code:
// see CMakeLists.txt), through a target attribute, so the rest of the build and the portable build are unchanged.
//
// Checked against: a float64 product of the bf16-rounded operands (tests/tensor/test_bf16_gemm.cpp).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dl {

bool bf16_gemm_compiled();
// The kernel and tile in use, e.g. "VDPBF16PS, 512-bit vectors, 6 x 4 tiles"; "none" where not usable.
std::string bf16_gemm_path();
// Tile shapes the kernel can run: VDPBF16PS register tiles (rows x 16-column vectors) 0 = 6 x 4, 1 = 12 x 2, 2 = 8 x 3,
// and 3 = AMX tiles (tensor/bf16_amx.h; fails where amx::usable() is false). The CPUID choice is 3 where AMX is usable,
// else 0. Benchmarks and tests set one; -1 restores the CPUID choice. Returns the previous shape. The three VDPBF16PS
// tiles give the same bits; AMX rounds its sums differently (bf16_amx.h), so its bits are its own.
int set_bf16_tile(int shape);
// Whether the products run on AMX now (shape 3): the attention's tiles (tensor/bf16_tiles.h) follow the GEMM.
bool bf16_amx_in_use();

// C (M, N) = op(A) op(B) + beta C for beta 0 or 1, in bf16 with float32 sums, on up to `threads` OpenMP threads (row or
// column panels of 64). op(A) is (M, K): A (M, K) with row stride lda, or (K, M) when ta; op(B) is (K, N): B (K, N)
// with row stride ldb, or (N, K) when tb. With `bias` (N floats; beta 0 only) every row of C starts from it instead of
// zero - a linear layer's y = x W^T + b in one pass over C, the same bits as copying b into C and taking beta 1.
// Callers check bf16_gemm_usable() (tensor/bf16.h) first.
void bf16_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
               float beta, float* C, int64_t ldc, int threads, const float* bias = nullptr);

// op(B) (K, N) packed once for later products: a recurrent weight, the same at every step of a sequence
// (nn/fused/lstm_kernels.cpp), or a linear layer's input kept for its weight gradient (autograd/linalg.cpp: half the
// bytes of the float32 input, and no second conversion in the backward). Pair words (Kp, Np), Np = N rounded up to 16
// columns, zero beyond N, in memory from the caching allocator (shared: copies of the struct share the words).
struct Bf16PackedB {
  int64_t K = 0, N = 0, Np = 0;
  std::shared_ptr<uint32_t> words;
  const uint32_t* data() const { return words.get(); }
};
// Packed on up to `threads` OpenMP threads (the same words for any count).
Bf16PackedB bf16_pack_b(bool tb, const float* B, int64_t ldb, int64_t K, int64_t N, int threads = 1);
// C (M, N) = op(A) B from the packed B (beta 0), on up to `threads` threads: bf16_gemm's panels and bits, without
// packing B.
void bf16_gemm(bool ta, int64_t M, const float* A, int64_t lda, const Bf16PackedB& B, float* C, int64_t ldc, int threads);
// A matrix X (R, C) read once for the two products that take it (bf16t::pairs_in_and_across_rows): its in-row words
// (R, (C + 1) / 2), which a product reads as op(A) = X, and its across-row words, which a product reads as op(A) = X^T
// or as op(B) = X (a Bf16PackedB with K = R, N = C). A linear layer's input is the forward's A and the weight
// gradient's B; its dy is dx = dy W's A and dW = dy^T x's transposed A: packed separately, each was read twice.
struct Bf16PackedBoth {
  int64_t R = 0, C = 0;
  std::shared_ptr<uint32_t> in_rows;  // (R, (C + 1) / 2)
  Bf16PackedB across;                 // (R + 1) / 2 x Np words
};
// With column_sums (C floats), also column_sums[j] = the sum of X(r, j) over all rows, from the same read: a linear
// layer's bias gradient beside the packing of its dy. The sum's order (chunks of 256 rows in float32, the chunks in
// float64) is bf16_column_sums', bit for bit, and the same for any thread count.
Bf16PackedBoth bf16_pack_both(const float* X, int64_t ldx, int64_t R, int64_t C, int threads = 1, float* column_sums = nullptr);
void bf16_column_sums(const float* X, int64_t ldx, int64_t R, int64_t C, int threads, float* out);
// bf16_pack_both of a matrix X (R, C) that is never stored whole in float32: rows(r0, n, buf) writes rows r0 .. r0 + n
// of X into buf (n rows of C floats; r0 even, n <= kPackRowsAtOnce), on the packing threads (each with its own buf, the
// rows of a 256-row chunk in order). The words and the column sums are bf16_pack_both's on the same X, bit for bit.
// A fused op packs its elementwise result this way (autograd/feed_forward.cpp: GELU and dropout between two linear
// layers), so the result is neither written to memory in float32 nor read back.
constexpr int64_t kPackRowsAtOnce = 16;
Bf16PackedBoth bf16_pack_both_rows(int64_t R, int64_t C, const std::function<void(int64_t, int64_t, float*)>& rows, int threads,
                                   float* column_sums = nullptr);
// C (M, N) = op(A) op(B), beta 0, with op(A) from a Bf16PackedBoth (ta false: A = X, M = R, K = C; ta true: A = X^T,
// M = C, K = R) and op(B) as bf16_gemm's (float B, tb) or packed: bf16_gemm's panels and bits, without packing A.
void bf16_gemm(bool ta, const Bf16PackedBoth& A, bool tb, int64_t N, const float* B, int64_t ldb, float* C, int64_t ldc,
               int threads, const float* bias = nullptr);
void bf16_gemm(bool ta, const Bf16PackedBoth& A, const Bf16PackedB& B, float* C, int64_t ldc, int threads);
// C[:, c0 : c0 + n] = op(A) B[:, c0 : c0 + n] + beta C[:, c0 : c0 + n] (beta 0 or 1) for each c0 of `c0s`, on the
// calling thread, from the packed B (each c0 a multiple of 16, c0 + n <= N; C points at column 0). A is converted once
// for all the slices, B not at all; the same bits as bf16_gemm on the same operands.
void bf16_gemm_packed(bool ta, int64_t M, int64_t n, const float* A, int64_t lda, const Bf16PackedB& B,
                      const std::vector<int64_t>& c0s, float beta, float* C, int64_t ldc);
// The benchmark's peak probes: GFLOP/s of a register-only loop of independent FMAs (float32, 2 flops per lane) or
// VDPBF16PS (4 flops per lane) on 512-bit vectors, on the calling thread. 0 where the instruction is missing.
double probe_fma_gflops(int64_t iters);
double probe_dpbf16_gflops(int64_t iters);
// The same for AMX's TDPBF16PS on four tile registers (16 x 16 x 32 pairs, 16384 flops an instruction); 0 where AMX is
// not usable (tensor/bf16_amx.h).
double probe_amx_gflops(int64_t iters);

}  // namespace dl
