// tensor/bf16_amx.h - the bf16 GEMM's panels on Intel AMX (Advanced Matrix Extensions): TDPBF16PS on tile registers.
//
// What AMX is: eight tile registers of up to 16 rows x 64 bytes each, loaded and stored with a row stride, and one
// instruction, TDPBF16PS C, A, B, that does C (16 x 16 float32) += A (16 rows x 16 pair words) B (16 pair rows x 16
// columns of pair words): 16 x 16 x 32 multiply-adds, 8192 of them in one instruction. The operands are pair words,
// exactly the layout tensor/bf16_gemm.h already packs for VDPBF16PS: an A tile is 16 rows of Ap (16 consecutive pairs
// each), a B tile is 16 rows of Bp (16 columns each). So the panels below read the same packed words as the VDPBF16PS
// tiles; only the instruction differs. Sapphire Rapids runs one TDPBF16PS per 16 cycles per core: 1024 flops a cycle,
// eight times VDPBF16PS on two 512-bit ports (measured by probe_amx_gflops; docs/performance.md).
//
// Blocking: C in blocks of 32 x 32 (four C tiles 0-3, two A tiles 4-5, two B tiles 6-7: all eight registers), k in
// chunks of kKc pairs (a multiple of 16). A block's 32 rows x chunk of Ap are copied once into a contiguous buffer (any
// layout of Ap, zero-padded to whole tiles: ragged rows and an odd number of pairs cost nothing in the loop) and reused
// for every column block. Ragged columns and rows of C go through a 16 x 16 buffer; whole tiles load and store C in place.
//
// Bits: TDPBF16PS does not round as VDPBF16PS does (tests/tensor/test_bf16_gemm.cpp measured about half the elements
// of a 16-pair product differing in the last bits; both within float32 accumulation error of the exact sum). Each C
// element is still one fixed sequence of instructions over its pairs in order (tiles start at pair 0 of each chunk,
// chunks at multiples of kKc), so thread counts and panel cuts do not change its bits; a machine with AMX gives the
// same bits on every run, and resumes bit-identically. DL_AMX=off (read once) keeps the VDPBF16PS tiles.
//
// The OS must agree: Linux hands out the 8 KiB of tile state only to a process that asks (arch_prctl
// ARCH_REQ_XCOMP_PERM, kernel 5.16 and later); usable() asks once. Built, like bf16_gemm.cpp, through a target
// attribute with clang or GCC >= 13 only.
// Checked against: a float64 product of the bf16-rounded operands, one and two threads, packed B and column slices
// (tests/tensor/test_bf16_gemm.cpp, which skips the AMX cases where the CPU has none).
#pragma once
#include <cstdint>
#include <string>

namespace dl::amx {

// Compiled in, the CPU reports AMX-TILE and AMX-BF16, the OS saves the tile state and granted it to this process,
// and DL_AMX is not "off" (read once: "on", "auto" or unset leave it to the CPU; anything else fails).
bool usable();
// Why not, in words ("" when usable).
std::string unusable_reason();

// C rows [0, M) x columns [0, n) = Ap Bp + beta C (beta 0 or 1; with `bias`, beta 0, every row starts from it), over
// Kp pairs. Ap word (i, kp) at a[i ars + kp aks]; Bp word (kp, j) at b[kp ldb + j], with whole 16-column vectors up to
// n rounded up to 16. On the calling thread.
void panel(int64_t M, int64_t n, int64_t Kp, const uint32_t* a, int64_t ars, int64_t aks, const uint32_t* b, int64_t ldb,
           float beta, float* C, int64_t ldc, const float* bias);

// Keeps the tile configuration between panels on this thread while one is alive: each panel configures the tiles
// (LDTILECFG) unless they already are, and releases them (back to the init state, so a context switch saves no tile
// data) unless a TileHold is open. The blocked attention holds them for a thread's whole share of (b, h) pairs, where
// its small products - a 64 x 128 score tile is 32 TDPBF16PS - paid a configuration and a release each. Nests; costs
// nothing where no panel runs (nothing is configured, nothing released).
struct TileHold {
  TileHold();
  ~TileHold();
  TileHold(const TileHold&) = delete;
  TileHold& operator=(const TileHold&) = delete;
};

// The benchmark's peak loop (probe_amx_gflops, tensor/bf16_gemm.h times it): `iters` rounds of four independent
// TDPBF16PS on tile registers, 4 x 16 x 16 x 32 x 2 flops a round; returns a value of the sums. 0 where not usable.
double probe_loop(int64_t iters);

}  // namespace dl::amx
