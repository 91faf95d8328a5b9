// tensor/bf16_tiles.h - the small VDPBF16PS products of the blocked attention's tiles (nn/fused/flash_products.h) and
// the packings that round their operands to bfloat16 pairs.
//
// VDPBF16PS adds a0 b0 + a1 b1 to each float32 lane, where (a0, a1), (b0, b1) are the two bf16 halves of a 32-bit
// word (tensor/bf16_gemm.h says more). So both operands of C (M, N) (+)= A (M, K) B (K, N) are stored with K taken in
// pairs, kp = k / 2, one 32-bit word per pair ("pair word" = [bf16 x_lo | bf16 x_hi << 16]):
//   A  read as a[r ars + kp aks]   word (r, kp) = [A(r, 2 kp) | A(r, 2 kp + 1)]   broadcast to all 16 lanes
//   B  (Kp, N) rows ldb apart      word (kp, j) = [B(2 kp, j) | B(2 kp + 1, j)]   16 columns per vector
// The strides of A let one packed array serve as A or as its transpose (as tensor/microkernel.h's a, ars, aks).
// The kernel is tensor/microkernel.h's register tile with the FMA replaced: a block of R rows x W vectors of C stays in
// 24 zmm registers for the whole k loop (6 x 4, then 12 x 2, then 12 x 1 vectors, rows in blocks of R, R - 1, ...).
// Each C element is one running float32 sum over the pairs in order: no tiling or thread count changes its bits.
// Sizes are the attention's: K = HS or a key / query block (128, 48), so nothing is chunked or threaded.
// Where the GEMM runs on AMX (bf16_amx_in_use(), tensor/bf16_gemm.h), tile_gemm does too (amx::panel: the same pair
// words, TDPBF16PS instead of VDPBF16PS; on the Intel Xeon of docs/performance.md the attention's products then take
// 290 ms of the Transformer step instead of 454).
//
// The packings round to nearest even with float_to_bf16's rule (tensor/bf16.h, NaN kept), in software, so the bits are
// the same on every CPU that runs the kernel; an element past the source's n or rows is a zero word half.
// Kinds of pair word a tile operand needs, for a row-major float source x (rows, n) with row stride ldx:
//   pairs_in_rows      dst (rows, words)  word (r, p) = [x(r, 2p) | x(r, 2p + 1)]       pairs along a row
//   pairs_across_rows  dst (prows, words) word (p, j) = [x(2p, j) | x(2p + 1, j)]       two rows interleaved
//   pairs_transposed   dst (words, cols)  word (p, r) = [x(r, 2p) | x(r, 2p + 1)]       pairs along a row, transposed
// Zero words fill each destination row up to `words` (or cols) and the rows up to the destination's row count.
//
// Built, like tensor/bf16_gemm.cpp, through a target attribute with clang or GCC >= 13 only, so -DDL_NATIVE=OFF builds
// it; callers check bf16_gemm_usable() (tensor/bf16.h) first - elsewhere these fail.
// Checked against: float64 products of the bf16-rounded operands, and float_to_bf16 bit for bit
// (tests/tensor/test_bf16_tiles.cpp).
#pragma once
#include <cstdint>

namespace dl::bf16t {

// C (M, N) = A B (acc false) or C += A B (acc true); N a multiple of 16 (columns of B and C exist up to it).
void tile_gemm(bool acc, int64_t M, int64_t N, int64_t Kp, const uint32_t* a, int64_t ars, int64_t aks, const uint32_t* b,
               int64_t ldb, float* c, int64_t ldc);

// The packings (see the box); scale multiplies each element in float32 before it is rounded.
void pairs_in_rows(const float* x, int64_t ldx, int64_t rows, int64_t n, float scale, uint32_t* dst, int64_t ldd, int64_t words,
                   int64_t dst_rows);
void pairs_across_rows(const float* x, int64_t ldx, int64_t rows, int64_t n, float scale, uint32_t* dst, int64_t ldd,
                       int64_t words, int64_t prows);
// Both of the first two from one read of x (no scale): in_rows (rows, words_in) as pairs_in_rows with dst_rows = rows,
// across (prows, words_across) as pairs_across_rows; the same words as the two calls (the backward's dS, packed for dQ
// and for dK). With `sums`, also sums[j] += x(r, j) for r = 0, 1, ... in order, j < n (float32, one row at a time): a
// linear layer's bias gradient from the read that packs its dy (bf16_pack_both).
void pairs_in_and_across_rows(const float* x, int64_t ldx, int64_t rows, int64_t n, uint32_t* in_rows, int64_t ld_in,
                              int64_t words_in, uint32_t* across, int64_t ld_across, int64_t words_across, int64_t prows,
                              float* sums = nullptr);
// (no scale: the transposed operands are K and V as they are)
void pairs_transposed(const float* x, int64_t ldx, int64_t rows, int64_t n, uint32_t* dst, int64_t ldd, int64_t cols,
                      int64_t words);

}  // namespace dl::bf16t
