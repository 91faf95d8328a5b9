// tensor/bf16_gemm.cpp - the VDPBF16PS GEMM (layout, tiles and reasons in the header).
#include "tensor/bf16_gemm.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <vector>

#include "tensor/allocator.h"
#include "tensor/bf16_amx.h"
#include "tensor/bf16.h"
#include "tensor/bf16_tiles.h"
#include "tensor/tensor.h"  // fail

#if defined(__x86_64__) && (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 13))
#define DL_BF16_KERNEL 1
#include <immintrin.h>
#define DL_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,fma")))
#define DL_FMA512_TARGET __attribute__((target("avx512f,fma")))
#define DL_FMA256_TARGET __attribute__((target("avx2,fma")))
#include "tensor/bf16_tile_kernel.h"
#endif

namespace dl {

namespace {

// pairs per k chunk (512 k): a 64-column Bp chunk is 64 KiB. Each chunk stores and reloads C's tile; the bits do not
// depend on it (one running sum per element either way). 128 -> 256 on the Zen 5 (bench_kernels_bf16 BM_Linear,
// three interleaved rounds): y = x W^T 512 -> 128 and dx = dy W 128 -> 512 (K = 512) 3.80-4.14 -> 3.34-3.53 ms, the
// others within noise; 64 was slower everywhere (K = 512: 5.9-6.2 ms).
constexpr int64_t kKc = 256;
constexpr int64_t kMc = 96;     // rows per group: a multiple of the tiles' 6, 8 and 12 rows
constexpr int64_t kPanel = 64;  // threads cut rows or columns at multiples of this (whole vectors)
constexpr double kSplitWork = 1 << 20;

// Ap from op(A) (M, K), in one of two layouts (the tiles read it through strides ars, aks: word (i, kp) at
// Ap[i ars + kp aks]):
//   A as it is (M, K):     Ap (M, Kp),  ars = Kp, aks = 1   each row's pairs from one row of A (pairs_in_rows)
//   A transposed (K, M):   Ap (Kp, M),  ars = 1,  aks = M   word (kp, i) from A's rows 2 kp, 2 kp + 1 at column i
//                                                           (pairs_across_rows: two rows of A read side by side)
// The transposed case used to be written as (M, Kp) too, each word Kp words after the previous one (32 KiB for the
// weight gradient's K = 16384 rows): half of that product's time. Rows [i0, i1) or pairs [p0, p1) per thread.
struct PackedA {
  uint32_t* p;
  int64_t ars, aks;
};

[[maybe_unused]] PackedA pack_a(bool ta, const float* A, int64_t lda, int64_t M, int64_t K, uint32_t* Ap, int part, int parts) {
  const int64_t Kp = (K + 1) / 2;
  if (!ta) {
    const int64_t i0 = M * part / parts, i1 = M * (part + 1) / parts;
    if (i1 > i0) bf16t::pairs_in_rows(A + i0 * lda, lda, i1 - i0, K, 1.f, Ap + i0 * Kp, Kp, Kp, i1 - i0);
    return {Ap, Kp, 1};
  }
  const int64_t p0 = Kp * part / parts, p1 = Kp * (part + 1) / parts;  // op(A)(i, k) = A[k lda + i]
  if (p1 > p0) bf16t::pairs_across_rows(A + 2 * p0 * lda, lda, std::min(K, 2 * p1) - 2 * p0, M, 1.f, Ap + p0 * M, M, M, p1 - p0);
  return {Ap, 1, M};
}

// Bp (Kp, Np) from op(B) (K, N), zero beyond column N; pairs [p0, p1) or, transposed, 16-column strips. A transposed B
// (N, K) is converted 16 of its rows at a time into a row-major block of pairs (16, Kp) (contiguous reads and writes),
// and the block is then copied out as runs of 16 words, one per pair: one strip of Bp.
[[maybe_unused]] void pack_b(bool tb, const float* B, int64_t ldb, int64_t K, int64_t N, int64_t Np, uint32_t* Bp, int part,
                             int parts) {
  const int64_t Kp = (K + 1) / 2;
  if (!tb) {
    const int64_t p0 = Kp * part / parts, p1 = Kp * (part + 1) / parts;
    if (p1 > p0)
      bf16t::pairs_across_rows(B + 2 * p0 * ldb, ldb, std::min(K, 2 * p1) - 2 * p0, N, 1.f, Bp + p0 * Np, Np, Np, p1 - p0);
    return;
  }
  const int64_t strips = Np / 16;  // op(B)(k, j) = B[j ldb + k]
  std::vector<uint32_t> block((size_t)(16 * Kp));
  for (int64_t s = strips * part / parts; s < strips * (part + 1) / parts; s++) {
    const int64_t rows = std::min<int64_t>(16, N - s * 16);  // rows past N are zero words
    bf16t::pairs_in_rows(B + s * 16 * ldb, ldb, rows, K, 1.f, block.data(), Kp, Kp, 16);
    for (int64_t p = 0; p < Kp; p++) {
      uint32_t* out = Bp + p * Np + s * 16;
      for (int64_t i = 0; i < 16; i++) out[i] = block[i * Kp + p];
    }
  }
}

// Pair words for a packing, from the caching allocator, so packing touches no fresh pages.
using PairScratch = HostScratch<uint32_t>;

struct TileShape {
  int rows, vecs;
};
constexpr TileShape kShapes[] = {{6, 4}, {12, 2}, {8, 3}};  // the VDPBF16PS register tiles
constexpr int kAmx = 3;                                     // the shape number past them: AMX (tensor/bf16_amx.h)
std::atomic<int> g_tile{-1};

// The tile from CPUID (deterministic per machine): AMX where the CPU and the OS allow it (tensor/bf16_amx.h), else the
// VDPBF16PS 6 x 4 tile. Measured (docs/performance.md): 6 x 4 the fastest of the three VDPBF16PS tiles on the Zen 4;
// AMX ahead of it on the Intel Xeon with AMX; Zen 5 takes the same 6 x 4 tile.
int default_tile() {
  static const int t = amx::usable() ? kAmx : 0;
  return t;
}
int tile_in_use() {
  const int t = g_tile.load(std::memory_order_relaxed);
  return t >= 0 ? t : default_tile();
}

#if defined(DL_BF16_KERNEL)
using bf16_kernel::row_blocks;  // the register tile, shared with the attention's tiles (tensor/bf16_tile_kernel.h)

// Columns [j, n) of C (n real columns, vectors of 16 over the padded Bp) in blocks of W vectors, then smaller blocks.
template <int R, int W>
DL_BF16_TARGET void columns(int64_t M, int64_t n, int64_t kp, const uint32_t* a, int64_t ars, int64_t aks, const uint32_t* b,
                            int64_t ldb, float* c, int64_t ldc, bool acc, const float* bias) {
  int64_t j = 0;
  for (; j + 16 * W <= n; j += 16 * W)
    row_blocks<R, W>(M, kp, a, ars, aks, b + j, ldb, c + j, ldc, acc, 0xFFFF, bias ? bias + j : nullptr);
  const int64_t left = n - j;  // fewer than W vectors' columns
  if (left <= 0) return;
  const int vecs = (int)((left + 15) / 16);  // 1 .. W; four only for the 6 x 4 tile (49 .. 63 columns left)
  const __mmask16 last = left % 16 ? (__mmask16)((1u << (left % 16)) - 1) : (__mmask16)0xFFFF;
  const float* bj = bias ? bias + j : nullptr;
  if (vecs == 4) row_blocks<6, 4>(M, kp, a, ars, aks, b + j, ldb, c + j, ldc, acc, last, bj);
  else if (vecs == 3) row_blocks<8, 3>(M, kp, a, ars, aks, b + j, ldb, c + j, ldc, acc, last, bj);
  else if (vecs == 2) row_blocks<12, 2>(M, kp, a, ars, aks, b + j, ldb, c + j, ldc, acc, last, bj);
  else row_blocks<12, 1>(M, kp, a, ars, aks, b + j, ldb, c + j, ldc, acc, last, bj);
}

// One panel: rows [0, M) x columns [0, n) of C from packed Ap rows and Bp columns, k in chunks, rows in groups.
DL_BF16_TARGET void panel(int64_t M, int64_t n, int64_t Kp, PackedA Ap, const uint32_t* Bp, int64_t Np, float beta, float* C,
                          int64_t ldc, int shape, const float* bias) {
  if (shape == kAmx) return amx::panel(M, n, Kp, Ap.p, Ap.ars, Ap.aks, Bp, Np, beta, C, ldc, bias);
  for (int64_t k0 = 0; k0 < Kp; k0 += kKc) {
    const int64_t kc = std::min(kKc, Kp - k0);
    const bool acc = k0 > 0 || beta == 1.f;  // the first chunk starts from 0 or the bias (beta 0: C is not read)
    for (int64_t i0 = 0; i0 < M; i0 += kMc) {
      const int64_t mc = std::min(kMc, M - i0);
      const uint32_t *a = Ap.p + i0 * Ap.ars + k0 * Ap.aks, *b = Bp + k0 * Np;
      float* c = C + i0 * ldc;
      if (shape == 1) columns<12, 2>(mc, n, kc, a, Ap.ars, Ap.aks, b, Np, c, ldc, acc, bias);
      else if (shape == 2) columns<8, 3>(mc, n, kc, a, Ap.ars, Ap.aks, b, Np, c, ldc, acc, bias);
      else columns<6, 4>(mc, n, kc, a, Ap.ars, Ap.aks, b, Np, c, ldc, acc, bias);
    }
  }
}

// Independent accumulators, so the loop runs at the instruction's throughput, not its latency.
DL_FMA512_TARGET double fma512_loop(int64_t iters) {
  __m512 x[12], m = _mm512_set1_ps(0.999f), d = _mm512_set1_ps(1e-3f);
  for (int i = 0; i < 12; i++) x[i] = _mm512_set1_ps((float)i);
  for (int64_t it = 0; it < iters; it++)
#pragma GCC unroll 12
    for (int i = 0; i < 12; i++) x[i] = _mm512_fmadd_ps(x[i], m, d);
  float s = 0;
  for (int i = 0; i < 12; i++) s += _mm512_reduce_add_ps(x[i]);
  return s;
}
DL_FMA256_TARGET double fma256_loop(int64_t iters) {
  __m256 x[12], m = _mm256_set1_ps(0.999f), d = _mm256_set1_ps(1e-3f);
  for (int i = 0; i < 12; i++) x[i] = _mm256_set1_ps((float)i);
  for (int64_t it = 0; it < iters; it++)
#pragma GCC unroll 12
    for (int i = 0; i < 12; i++) x[i] = _mm256_fmadd_ps(x[i], m, d);
  float s = 0, t[8];
  for (int i = 0; i < 12; i++) {
    _mm256_storeu_ps(t, x[i]);
    for (float v : t) s += v;
  }
  return s;
}
DL_BF16_TARGET double dpbf16_loop(int64_t iters) {
  __m512 x[12];
  const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3F803F80), b = (__m512bh)_mm512_set1_epi32(0x3A803A80);
  for (int i = 0; i < 12; i++) x[i] = _mm512_set1_ps((float)i);
  for (int64_t it = 0; it < iters; it++)
#pragma GCC unroll 12
    for (int i = 0; i < 12; i++) x[i] = _mm512_dpbf16_ps(x[i], a, b);
  float s = 0;
  for (int i = 0; i < 12; i++) s += _mm512_reduce_add_ps(x[i]);
  return s;
}
#endif

double thread_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// Rate over the thread's CPU time, not the wall clock: on a machine shared with other work the loop's own cycles are
// what it measures (on a quiet one the two agree).
template <class F> double timed_gflops(F loop, int64_t iters, double flops_per_iter) {
  volatile double sink = loop(iters / 10 + 1);  // warm the clocks
  const double t0 = thread_seconds();
  sink = sink + loop(iters);
  return (double)iters * flops_per_iter / (thread_seconds() - t0) * 1e-9;
}

}  // namespace

bool bf16_gemm_compiled() {
#if defined(DL_BF16_KERNEL)
  return true;
#else
  return false;
#endif
}

std::string bf16_gemm_path() {
  if (!bf16_gemm_usable()) return "none";
  if (tile_in_use() == kAmx) return "AMX TDPBF16PS, 16 x 16 tiles in 32 x 32 blocks";
  const TileShape s = kShapes[tile_in_use()];
  return "VDPBF16PS, 512-bit vectors, " + std::to_string(s.rows) + " x " + std::to_string(s.vecs) + " tiles";
}

bool bf16_amx_in_use() { return tile_in_use() == kAmx; }

int set_bf16_tile(int shape) {
  if (shape < -1 || shape > kAmx) fail("set_bf16_tile: shape " + std::to_string(shape) + ", expected -1, 0, 1, 2 or 3");
  if (shape == kAmx && !amx::usable()) fail("set_bf16_tile: shape 3 (AMX), but " + amx::unusable_reason());
  return g_tile.exchange(shape);
}

#if defined(DL_BF16_KERNEL)
namespace {
// bf16_gemm's body: packs A (and B, unless `packed` already holds op(B)'s words) on the threads, then row or column
// panels of 64 per thread.
// `pre`: op(A)'s words packed already (A unused).
void gemm_threads(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                  const uint32_t* packed, float beta, float* C, int64_t ldc, int threads, const float* bias,
                  const PackedA* pre = nullptr) {
  const int64_t Kp = (K + 1) / 2, Np = (N + 15) / 16 * 16;
  PairScratch ap(pre ? 0 : (size_t)(M * Kp)), bp(packed ? 0 : (size_t)(Kp * Np));
  const uint32_t* Bp = packed ? packed : bp.p;
  const bool split = threads > 1 && !omp_in_parallel() && (double)M * N * K >= kSplitWork;
  const int nt = split ? threads : 1;
  const bool by_rows = M >= N;
  const int64_t units = ((by_rows ? M : N) + kPanel - 1) / kPanel;
  const int parts = (int)std::min<int64_t>(nt, units);
  const int shape = tile_in_use();
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    const int t = omp_get_thread_num(), n = omp_get_num_threads();
    const PackedA a = pre ? *pre : pack_a(ta, A, lda, M, K, ap.p, t, n);
    if (!packed) pack_b(tb, B, ldb, K, N, Np, bp.p, t, n);
#pragma omp barrier
    for (int p = t; p < parts; p += n) {
      const int64_t total = by_rows ? M : N;
      const int64_t i0 = std::min(total, units * p / parts * kPanel), i1 = std::min(total, units * (p + 1) / parts * kPanel);
      if (i1 <= i0) continue;
      if (by_rows) panel(i1 - i0, N, Kp, {a.p + i0 * a.ars, a.ars, a.aks}, Bp, Np, beta, C + i0 * ldc, ldc, shape, bias);
      else panel(M, i1 - i0, Kp, a, Bp + i0, Np, beta, C + i0, ldc, shape, bias ? bias + i0 : nullptr);
    }
  }
  if (K == 0 && beta == 0.f)  // no pairs: the panels stored nothing
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) C[i * ldc + j] = bias ? bias[j] : 0.f;
}
}  // namespace
#endif

void bf16_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
               float beta, float* C, int64_t ldc, int threads, const float* bias) {
#if defined(DL_BF16_KERNEL)
  if (!bf16_gemm_usable()) fail("bf16_gemm: no bf16 arithmetic on this CPU or DL_BF16=off (check bf16_gemm_usable first)");
  if (beta != 0.f && beta != 1.f) fail("bf16_gemm: beta " + std::to_string(beta) + ", expected 0 or 1");
  if (bias && beta != 0.f) fail("bf16_gemm: a bias with beta 1 (the bias is the starting value in place of C)");
  if (M <= 0 || N <= 0) return;
  gemm_threads(ta, tb, M, N, K, A, lda, B, ldb, nullptr, beta, C, ldc, threads, bias);
#else
  fail("bf16_gemm: this build has no bf16 kernel (check bf16_gemm_usable first)");
#endif
}

void bf16_gemm(bool ta, int64_t M, const float* A, int64_t lda, const Bf16PackedB& B, float* C, int64_t ldc, int threads) {
#if defined(DL_BF16_KERNEL)
  if (!bf16_gemm_usable()) fail("bf16_gemm: no bf16 arithmetic on this CPU or DL_BF16=off (check bf16_gemm_usable first)");
  if (M <= 0 || B.N <= 0) return;
  gemm_threads(ta, false, M, B.N, B.K, A, lda, nullptr, 0, B.data(), 0.f, C, ldc, threads, nullptr);
#else
  fail("bf16_gemm: this build has no bf16 kernel (check bf16_gemm_usable first)");
#endif
}

namespace {
// n pair words (at least one) from the caching allocator, shared by the copies of what holds them.
std::shared_ptr<uint32_t> shared_words(int64_t n) {
  const size_t bytes = (size_t)std::max<int64_t>(n, 1) * 4;
  return std::shared_ptr<uint32_t>((uint32_t*)host_alloc(bytes), [bytes](uint32_t* w) { host_free(w, bytes); });
}
// Threads for a pass over an (R, C) matrix (packing, column sums): one below kSplitWork / 64 elements or inside a
// parallel region.
int pack_threads(int threads, int64_t R, int64_t C) {
  return threads > 1 && !omp_in_parallel() && (double)R * C >= kSplitWork / 64 ? threads : 1;
}
}  // namespace

Bf16PackedB bf16_pack_b(bool tb, const float* B, int64_t ldb, int64_t K, int64_t N, int threads) {
  Bf16PackedB p;
  p.K = K, p.N = N, p.Np = (N + 15) / 16 * 16;
  const int64_t n = std::max<int64_t>((K + 1) / 2 * p.Np, 1);
  p.words = shared_words(n);
  if (K <= 0 || N <= 0) std::fill(p.words.get(), p.words.get() + n, 0u);  // else every word is written below
#if defined(DL_BF16_KERNEL)
  if (!bf16_gemm_usable()) fail("bf16_pack_b: no bf16 arithmetic on this CPU or DL_BF16=off (check bf16_gemm_usable first)");
  const int nt = pack_threads(threads, K, N);
  if (K > 0 && N > 0) {
#pragma omp parallel num_threads(nt) if (nt > 1)
    pack_b(tb, B, ldb, K, N, p.Np, p.words.get(), omp_get_thread_num(), omp_get_num_threads());
  }
#else
  fail("bf16_pack_b: this build has no bf16 kernel (check bf16_gemm_usable first)");
#endif
  return p;
}

namespace {
// The column sums' order (bf16_pack_both's and bf16_column_sums'): rows in chunks of kSumRows from row 0, each chunk
// summed in float32 one row at a time, the chunks' sums added in order in float64. Threads take whole chunks, so the
// bits do not depend on how many there are.
constexpr int64_t kSumRows = 256;  // even: a chunk is whole pairs of rows
static_assert(kSumRows % kPackRowsAtOnce == 0 && kPackRowsAtOnce % 2 == 0, "a block of bf16_pack_both_rows is whole pairs in one chunk");
int64_t sum_chunks(int64_t R) { return (R + kSumRows - 1) / kSumRows; }
void add_chunks(const std::vector<float>& part, int64_t chunks, int64_t C, float* out) {
  for (int64_t j = 0; j < C; j++) {
    double s = 0;
    for (int64_t c = 0; c < chunks; c++) s += part[c * C + j];
    out[j] = (float)s;
  }
}
// The two layouts' words of an (R, C) matrix, allocated, not written (bf16_pack_both and bf16_pack_both_rows).
Bf16PackedBoth both_words(int64_t R, int64_t C) {
  Bf16PackedBoth p;
  p.R = R, p.C = C;
  p.across.K = R, p.across.N = C, p.across.Np = (C + 15) / 16 * 16;
  p.in_rows = shared_words(R * ((C + 1) / 2)), p.across.words = shared_words((R + 1) / 2 * p.across.Np);
  return p;
}
#if defined(DL_BF16_KERNEL)
// An empty matrix: the across words (at least one) and the sums zeroed, and true: nothing else to pack.
bool nothing_to_pack(Bf16PackedBoth& p, float* column_sums) {
  if (p.R > 0 && p.C > 0) return false;
  std::fill(p.across.words.get(), p.across.words.get() + std::max<int64_t>((p.R + 1) / 2 * p.across.Np, 1), 0u);
  if (column_sums) std::fill(column_sums, column_sums + std::max<int64_t>(p.C, 0), 0.f);
  return true;
}
#endif
}  // namespace

Bf16PackedBoth bf16_pack_both(const float* X, int64_t ldx, int64_t R, int64_t C, int threads, float* column_sums) {
  Bf16PackedBoth p = both_words(R, C);
#if defined(DL_BF16_KERNEL)
  const int64_t Cp = (C + 1) / 2, Rp = (R + 1) / 2;
  if (!bf16_gemm_usable()) fail("bf16_pack_both: no bf16 arithmetic on this CPU or DL_BF16=off (check bf16_gemm_usable first)");
  if (nothing_to_pack(p, column_sums)) return p;
  const int nt = pack_threads(threads, R, C);
  const int64_t chunks = sum_chunks(R);
  std::vector<float> part(column_sums ? (size_t)(chunks * C) : 0, 0.f);
  auto pack = [&](int64_t p0, int64_t p1, float* sums) {  // pairs of rows [p0, p1)
    if (p1 > p0)
      bf16t::pairs_in_and_across_rows(X + 2 * p0 * ldx, ldx, std::min(R, 2 * p1) - 2 * p0, C, p.in_rows.get() + 2 * p0 * Cp, Cp,
                                      Cp, p.across.words.get() + p0 * p.across.Np, p.across.Np, p.across.Np, p1 - p0, sums);
  };
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    const int t = omp_get_thread_num(), n = omp_get_num_threads();
    if (!column_sums) pack(Rp * t / n, Rp * (t + 1) / n, nullptr);
    else  // whole chunks per thread
      for (int64_t c = chunks * t / n; c < chunks * (t + 1) / n; c++)
        pack(c * kSumRows / 2, std::min(Rp, (c + 1) * kSumRows / 2), part.data() + c * C);
  }
  if (column_sums) add_chunks(part, chunks, C, column_sums);
#else
  (void)column_sums;
  fail("bf16_pack_both: this build has no bf16 kernel (check bf16_gemm_usable first)");
#endif
  return p;
}

Bf16PackedBoth bf16_pack_both_rows(int64_t R, int64_t C, const std::function<void(int64_t, int64_t, float*)>& rows, int threads,
                                   float* column_sums) {
  Bf16PackedBoth p = both_words(R, C);
#if defined(DL_BF16_KERNEL)
  const int64_t Cp = (C + 1) / 2;
  if (!bf16_gemm_usable()) fail("bf16_pack_both_rows: no bf16 arithmetic on this CPU or DL_BF16=off (check bf16_gemm_usable first)");
  if (nothing_to_pack(p, column_sums)) return p;
  const int nt = pack_threads(threads, R, C);
  const int64_t chunks = sum_chunks(R);
  std::vector<float> part(column_sums ? (size_t)(chunks * C) : 0, 0.f);
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    HostScratch<float> buf(kPackRowsAtOnce * C);
    const int t = omp_get_thread_num(), n = omp_get_num_threads();
    for (int64_t c = chunks * t / n; c < chunks * (t + 1) / n; c++)  // whole chunks per thread, as bf16_pack_both
      for (int64_t r0 = c * kSumRows; r0 < std::min(R, (c + 1) * kSumRows); r0 += kPackRowsAtOnce) {
        const int64_t m = std::min(kPackRowsAtOnce, R - r0);  // kSumRows is a multiple: no block crosses a chunk
        rows(r0, m, buf.p);
        bf16t::pairs_in_and_across_rows(buf.p, C, m, C, p.in_rows.get() + r0 * Cp, Cp, Cp, p.across.words.get() + r0 / 2 * p.across.Np,
                                        p.across.Np, p.across.Np, (m + 1) / 2, column_sums ? part.data() + c * C : nullptr);
      }
  }
  if (column_sums) add_chunks(part, chunks, C, column_sums);
#else
  (void)rows, (void)threads, (void)column_sums;
  fail("bf16_pack_both_rows: this build has no bf16 kernel (check bf16_gemm_usable first)");
#endif
  return p;
}

void bf16_column_sums(const float* X, int64_t ldx, int64_t R, int64_t C, int threads, float* out) {
  if (C <= 0) return;
  const int64_t chunks = sum_chunks(std::max<int64_t>(R, 0));
  std::vector<float> part((size_t)(chunks * C), 0.f);
  const int nt = pack_threads(threads, R, C);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (int64_t c = 0; c < chunks; c++) {
    float* s = part.data() + c * C;
    for (int64_t r = c * kSumRows; r < std::min(R, (c + 1) * kSumRows); r++) {
      const float* x = X + r * ldx;
#pragma omp simd
      for (int64_t j = 0; j < C; j++) s[j] += x[j];
    }
  }
  add_chunks(part, chunks, C, out);
}

#if defined(DL_BF16_KERNEL)
namespace {
// op(A)'s words in a Bf16PackedBoth, as pack_a lays them out: X's in-row words (M, Kp), or X^T's as the across-row
// words (Kp, M) with the row stride Np.
PackedA packed_a(bool ta, const Bf16PackedBoth& A) {
  return ta ? PackedA{A.across.words.get(), 1, A.across.Np} : PackedA{A.in_rows.get(), (A.C + 1) / 2, 1};
}
}  // namespace
#endif

void bf16_gemm(bool ta, const Bf16PackedBoth& A, bool tb, int64_t N, const float* B, int64_t ldb, float* C, int64_t ldc,
               int threads, const float* bias) {
#if defined(DL_BF16_KERNEL)
  if (!bf16_gemm_usable()) fail("bf16_gemm: no bf16 arithmetic on this CPU or DL_BF16=off (check bf16_gemm_usable first)");
  const int64_t M = ta ? A.C : A.R, K = ta ? A.R : A.C;
  if (M <= 0 || N <= 0) return;
  const PackedA a = packed_a(ta, A);
  gemm_threads(ta, tb, M, N, K, nullptr, 0, B, ldb, nullptr, 0.f, C, ldc, threads, bias, &a);
#else
  fail("bf16_gemm: this build has no bf16 kernel (check bf16_gemm_usable first)");
#endif
}

void bf16_gemm(bool ta, const Bf16PackedBoth& A, const Bf16PackedB& B, float* C, int64_t ldc, int threads) {
#if defined(DL_BF16_KERNEL)
  if (!bf16_gemm_usable()) fail("bf16_gemm: no bf16 arithmetic on this CPU or DL_BF16=off (check bf16_gemm_usable first)");
  const int64_t M = ta ? A.C : A.R, K = ta ? A.R : A.C;
  if (K != B.K)
    fail("bf16_gemm: op(A) is (" + std::to_string(M) + ", " + std::to_string(K) +
         ") but the packed B has K = " + std::to_string(B.K));
  if (M <= 0 || B.N <= 0) return;
  const PackedA a = packed_a(ta, A);
  gemm_threads(ta, false, M, B.N, K, nullptr, 0, nullptr, 0, B.data(), 0.f, C, ldc, threads, nullptr, &a);
#else
  fail("bf16_gemm: this build has no bf16 kernel (check bf16_gemm_usable first)");
#endif
}

void bf16_gemm_packed(bool ta, int64_t M, int64_t n, const float* A, int64_t lda, const Bf16PackedB& B,
                      const std::vector<int64_t>& c0s, float beta, float* C, int64_t ldc) {
#if defined(DL_BF16_KERNEL)
  if (beta != 0.f && beta != 1.f) fail("bf16_gemm_packed: beta " + std::to_string(beta) + ", expected 0 or 1");
  for (int64_t c0 : c0s)
    if (c0 % 16 || c0 < 0 || n < 0 || c0 + n > B.N)
      fail("bf16_gemm_packed: columns [" + std::to_string(c0) + ", " + std::to_string(c0 + n) + ") of a packed B with " +
           std::to_string(B.N) + " (the first a multiple of 16)");
  if (M <= 0 || n <= 0) return;
  if (B.K == 0) {
    if (beta == 0.f)
      for (int64_t c0 : c0s)
        for (int64_t i = 0; i < M; i++) std::fill(C + i * ldc + c0, C + i * ldc + c0 + n, 0.f);
    return;
  }
  const int64_t Kp = (B.K + 1) / 2;
  PairScratch ap((size_t)(M * Kp));
  const PackedA a = pack_a(ta, A, lda, M, B.K, ap.p, 0, 1);
  for (int64_t c0 : c0s) panel(M, n, Kp, a, B.data() + c0, B.Np, beta, C + c0, ldc, tile_in_use(), nullptr);
#else
  fail("bf16_gemm_packed: this build has no bf16 kernel (check bf16_gemm_usable first)");
#endif
}

double probe_fma_gflops(int64_t iters) {
#if defined(DL_BF16_KERNEL)
  if (cpu_info().avx512) return timed_gflops(fma512_loop, iters, 12.0 * 16 * 2);
  if (cpu_info().avx2 && cpu_info().fma) return timed_gflops(fma256_loop, iters, 12.0 * 8 * 2);
#endif
  return 0;
}
double probe_dpbf16_gflops(int64_t iters) {
#if defined(DL_BF16_KERNEL)
  if (cpu_info().avx512_bf16) return timed_gflops(dpbf16_loop, iters, 12.0 * 16 * 4);
#endif
  return 0;
}
double probe_amx_gflops(int64_t iters) {
  return amx::usable() ? timed_gflops(amx::probe_loop, iters, 4 * (16.0 * 16 * 32 * 2)) : 0;
}

}  // namespace dl
