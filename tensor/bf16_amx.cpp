// tensor/bf16_amx.cpp - the AMX panels of the bf16 GEMM (layout, blocking and bits in the header).
#include "tensor/bf16_amx.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "tensor/bf16.h"    // cpu_info
#include "tensor/tensor.h"  // fail

#if defined(__x86_64__) && defined(__linux__) && (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 13))
#define DL_AMX_KERNEL 1
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#define DL_AMX_TARGET __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl")))
#endif

namespace dl::amx {

namespace {

#if defined(DL_AMX_KERNEL)
constexpr int64_t kKc = 256;  // pairs per chunk (a multiple of 16): a 32-row block of A is 32 KiB, within L1

// "" when the CPU, the OS and the environment allow AMX; else why not. Asks the kernel for the tile state once.
std::string check() {
  const char* e = std::getenv("DL_AMX");
  if (e && *e && std::strcmp(e, "on") != 0 && std::strcmp(e, "auto") != 0) {
    if (std::strcmp(e, "off") == 0) return "DL_AMX=off in the environment";
    fail(std::string("DL_AMX='") + e + "': expected off, on or auto");
  }
  if (!cpu_info().amx_bf16) return "the CPU has no AMX-TILE / AMX-BF16, or the OS does not save the tile state";
  constexpr long kReqXcompPerm = 0x1023, kXtiledata = 18;  // Linux's arch_prctl request and XFEATURE_XTILEDATA
  if (syscall(SYS_arch_prctl, kReqXcompPerm, kXtiledata) != 0) return "the kernel refused the tile state (arch_prctl)";
  return "";
}

const std::string& reason() {
  static const std::string r = check();
  return r;
}

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Every tile 16 rows x 64 bytes: C tiles 0-3 (block row r, column c: tile 2 r + c), A tiles 4-5, B tiles 6-7.
DL_AMX_TARGET void configure() {
  TileConfig cfg;
  for (int t = 0; t < 8; t++) cfg.rows[t] = 16, cfg.colsb[t] = 64;
  _tile_loadconfig(&cfg);
}

// This thread's tiles: configured by a panel (or the probe) and not released since; open TileHolds.
thread_local bool t_configured = false;
thread_local int t_holds = 0;
DL_AMX_TARGET void acquire() {
  if (!t_configured) configure(), t_configured = true;
}
DL_AMX_TARGET void release() {
  if (t_configured && t_holds == 0) _tile_release(), t_configured = false;
}

// 16 x 16 words in registers: on return r[c] holds what was column c (r[c][q] = r_in[q][c]). Three stages: 32-bit
// unpacks pair rows, 64-bit unpacks make each 128-bit lane one column's four rows, lane shuffles gather the four lanes.
DL_AMX_TARGET inline void transpose16(__m512i r[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 8; i++)
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]), t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  for (int i = 0; i < 4; i++) {  // u[4 i + j], lane l: column 4 l + j, rows 4 i .. 4 i + 3
    u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i + 0], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i + 0], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int j = 0; j < 4; j++) {
    const __m512i v0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x44), v1 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xEE);
    const __m512i w0 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x44), w1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xEE);
    r[j] = _mm512_shuffle_i32x4(v0, w0, 0x88), r[4 + j] = _mm512_shuffle_i32x4(v0, w0, 0xDD);
    r[8 + j] = _mm512_shuffle_i32x4(v1, w1, 0x88), r[12 + j] = _mm512_shuffle_i32x4(v1, w1, 0xDD);
  }
}

// Rows [0, rows) x pairs [0, kc) of Ap into buf (rows_out x kc16 words), zero beyond: whole tiles for the loop.
DL_AMX_TARGET void gather_a(const uint32_t* a, int64_t ars, int64_t aks, int64_t rows, int64_t kc, int64_t kc16, int64_t rows_out,
                            uint32_t* buf) {
  if (aks == 1) {  // rows of Ap are rows of buf
    for (int64_t r = 0; r < rows; r++) {
      std::memcpy(buf + r * kc16, a + r * ars, (size_t)kc * 4);
      std::fill(buf + r * kc16 + kc, buf + (r + 1) * kc16, 0u);
    }
    std::fill(buf + rows * kc16, buf + rows_out * kc16, 0u);
  } else if (ars == 1) {  // A transposed: Ap's rows are pairs; 16 x 16 blocks turned over in registers
    for (int64_t r0 = 0; r0 < rows_out; r0 += 16) {
      const int64_t nr = std::clamp<int64_t>(rows - r0, 0, 16);
      const __mmask16 m = (__mmask16)((1u << nr) - 1);
      for (int64_t p0 = 0; p0 < kc16; p0 += 16) {
        __m512i v[16];
        for (int q = 0; q < 16; q++)
          v[q] = p0 + q < kc ? _mm512_maskz_loadu_epi32(m, a + (p0 + q) * aks + r0) : _mm512_setzero_si512();
        transpose16(v);
        for (int c = 0; c < 16; c++) _mm512_storeu_si512((void*)(buf + (r0 + c) * kc16 + p0), v[c]);
      }
    }
  } else {
    for (int64_t r = 0; r < rows_out; r++)
      for (int64_t p = 0; p < kc16; p++) buf[r * kc16 + p] = r < rows && p < kc ? a[r * ars + p * aks] : 0u;
  }
}

// C tile T (block row r, column c of the 32 x 32 block) from memory: C itself where the tile is whole, else through
// `tmp`. acc: C's values; else the bias row (a load with row stride 0 where 16 of its columns exist), or zero. Rows
// past C's in a bias tile are never stored.
template <int T>
DL_AMX_TARGET void c_in(float* c, int64_t ldc, int64_t rows, int64_t cols, bool acc, const float* bias, float* tmp) {
  if (acc && rows == 16 && cols == 16) return _tile_loadd(T, c, ldc * 4);
  if (!acc && !bias) return _tile_zero(T);
  if (!acc && cols == 16) return _tile_loadd(T, bias, 0);  // stride 0: every row of the tile reads the bias row
  std::fill(tmp, tmp + 256, 0.f);
  for (int64_t r = 0; r < rows; r++) std::copy(acc ? c + r * ldc : bias, (acc ? c + r * ldc : bias) + cols, tmp + r * 16);
  _tile_loadd(T, tmp, 64);
}
template <int T> DL_AMX_TARGET void c_out(float* c, int64_t ldc, int64_t rows, int64_t cols, float* tmp) {
  if (rows == 16 && cols == 16) return _tile_stored(T, c, ldc * 4);
  _tile_stored(T, tmp, 64);
  for (int64_t r = 0; r < rows; r++) std::copy(tmp + r * 16, tmp + r * 16 + cols, c + r * ldc);
}

// One block of C: TR x TC tiles (rows valid `rows` <= 16 TR, columns `cols` <= 16 TC), over the kc pairs of a chunk.
// A from the gathered buffer (kc16 words a row); B rows of the chunk from Bp, the last partial 16 pairs through a
// zero-padded copy (rows past the chunk would be the next chunk's or past the end of Bp). a_held: the chunk is one k
// step (kc16 = 16) and A's tiles 4 (and 5) hold it already (panel loads them once per row block).
template <int TR, int TC>
DL_AMX_TARGET void block(int64_t kc, int64_t kc16, const uint32_t* abuf, int64_t lda, const uint32_t* b, int64_t ldb, float* c,
                         int64_t ldc, int64_t rows, int64_t cols, bool acc, const float* bias, bool a_held) {
  if constexpr (TR == 2 && TC == 2)
    if (rows == 32 && cols == 32 && kc == kc16 && !bias) {  // whole tiles: the same steps without a branch between them
      if (acc) {
        _tile_loadd(0, c, ldc * 4), _tile_loadd(1, c + 16, ldc * 4);
        _tile_loadd(2, c + 16 * ldc, ldc * 4), _tile_loadd(3, c + 16 * ldc + 16, ldc * 4);
      } else {
        _tile_zero(0), _tile_zero(1), _tile_zero(2), _tile_zero(3);
      }
      for (int64_t kk = 0; kk < kc16; kk += 16) {
        if (!a_held) _tile_loadd(4, abuf + kk, lda * 4), _tile_loadd(5, abuf + 16 * lda + kk, lda * 4);
        _tile_loadd(6, b + kk * ldb, ldb * 4), _tile_loadd(7, b + kk * ldb + 16, ldb * 4);
        _tile_dpbf16ps(0, 4, 6), _tile_dpbf16ps(1, 4, 7), _tile_dpbf16ps(2, 5, 6), _tile_dpbf16ps(3, 5, 7);
      }
      _tile_stored(0, c, ldc * 4), _tile_stored(1, c + 16, ldc * 4);
      _tile_stored(2, c + 16 * ldc, ldc * 4), _tile_stored(3, c + 16 * ldc + 16, ldc * 4);
      return;
    }
  alignas(64) float tmp[256];
  alignas(64) uint32_t btail[16 * 32];
  auto rows_of = [&](int t) { return std::min<int64_t>(16, rows - 16 * t); };
  auto cols_of = [&](int t) { return std::min<int64_t>(16, cols - 16 * t); };
  c_in<0>(c, ldc, rows_of(0), cols_of(0), acc, bias, tmp);
  if constexpr (TC == 2) c_in<1>(c + 16, ldc, rows_of(0), cols_of(1), acc, bias ? bias + 16 : nullptr, tmp);
  if constexpr (TR == 2) c_in<2>(c + 16 * ldc, ldc, rows_of(1), cols_of(0), acc, bias, tmp);
  if constexpr (TR == 2 && TC == 2) c_in<3>(c + 16 * ldc + 16, ldc, rows_of(1), cols_of(1), acc, bias ? bias + 16 : nullptr, tmp);
  for (int64_t kk = 0; kk < kc16; kk += 16) {
    if (!a_held) {
      _tile_loadd(4, abuf + kk, lda * 4);
      if constexpr (TR == 2) _tile_loadd(5, abuf + 16 * lda + kk, lda * 4);
    }
    if (kk + 16 <= kc) {
      _tile_loadd(6, b + kk * ldb, ldb * 4);
      if constexpr (TC == 2) _tile_loadd(7, b + kk * ldb + 16, ldb * 4);
    } else {
      std::fill(btail, btail + 16 * 32, 0u);
      for (int64_t p = 0; p < kc - kk; p++) std::copy(b + (kk + p) * ldb, b + (kk + p) * ldb + 16 * TC, btail + p * 32);
      _tile_loadd(6, btail, 128);
      if constexpr (TC == 2) _tile_loadd(7, btail + 16, 128);
    }
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (TC == 2) _tile_dpbf16ps(1, 4, 7);
    if constexpr (TR == 2) _tile_dpbf16ps(2, 5, 6);
    if constexpr (TR == 2 && TC == 2) _tile_dpbf16ps(3, 5, 7);
  }
  c_out<0>(c, ldc, rows_of(0), cols_of(0), tmp);
  if constexpr (TC == 2) c_out<1>(c + 16, ldc, rows_of(0), cols_of(1), tmp);
  if constexpr (TR == 2) c_out<2>(c + 16 * ldc, ldc, rows_of(1), cols_of(0), tmp);
  if constexpr (TR == 2 && TC == 2) c_out<3>(c + 16 * ldc + 16, ldc, rows_of(1), cols_of(1), tmp);
}

#endif

}  // namespace

bool usable() {
#if defined(DL_AMX_KERNEL)
  return reason().empty();
#else
  return false;
#endif
}

std::string unusable_reason() {
#if defined(DL_AMX_KERNEL)
  return reason();
#else
  return "this build has no AMX kernel";
#endif
}

#if defined(DL_AMX_KERNEL)
DL_AMX_TARGET void panel(int64_t M, int64_t n, int64_t Kp, const uint32_t* a, int64_t ars, int64_t aks, const uint32_t* b,
                         int64_t ldb, float beta, float* C, int64_t ldc, const float* bias) {
  if (!usable()) fail("amx::panel: AMX is not usable here (" + reason() + ")");
  alignas(64) static thread_local uint32_t abuf[32 * kKc];
  acquire();
  for (int64_t k0 = 0; k0 < Kp; k0 += kKc) {
    const int64_t kc = std::min(kKc, Kp - k0), kc16 = (kc + 15) / 16 * 16;
    const bool acc = k0 > 0 || beta == 1.f;
    const float* bz = acc ? nullptr : bias;
    for (int64_t i0 = 0; i0 < M; i0 += 32) {
      const int64_t rows = std::min<int64_t>(32, M - i0);
      const bool two_rows = rows > 16;
      // Ap's rows already hold whole tiles (pairs along the row, every tile row a real row): read them in place;
      // else gather them into the zero-padded buffer.
      const bool in_place = aks == 1 && kc == kc16 && rows == (two_rows ? 32 : 16);
      const uint32_t* at = in_place ? a + i0 * ars + k0 : abuf;
      const int64_t lda = in_place ? ars : kc16;
      if (!in_place) gather_a(a + i0 * ars + k0 * aks, ars, aks, rows, kc, kc16, two_rows ? 32 : 16, abuf);
      // A chunk of one k step (the attention's scores, K = a head of 32): A's tiles are loaded once for all the
      // column blocks. Reloaded per block, each load waited for the previous block's products to finish reading the
      // tile (tile registers are not renamed); the score product on the Intel VM took ~1.7x the time of the bare ops.
      const bool a_held = kc16 == 16;
      if (a_held) {
        _tile_loadd(4, at, lda * 4);
        if (two_rows) _tile_loadd(5, at + 16 * lda, lda * 4);
      }
      for (int64_t j0 = 0; j0 < n; j0 += 32) {
        const int64_t cols = std::min<int64_t>(32, n - j0);
        const uint32_t* bk = b + k0 * ldb + j0;
        float* c = C + i0 * ldc + j0;
        const float* bj = bz ? bz + j0 : nullptr;
        if (two_rows && cols > 16) block<2, 2>(kc, kc16, at, lda, bk, ldb, c, ldc, rows, cols, acc, bj, a_held);
        else if (two_rows) block<2, 1>(kc, kc16, at, lda, bk, ldb, c, ldc, rows, cols, acc, bj, a_held);
        else if (cols > 16) block<1, 2>(kc, kc16, at, lda, bk, ldb, c, ldc, rows, cols, acc, bj, a_held);
        else block<1, 1>(kc, kc16, at, lda, bk, ldb, c, ldc, rows, cols, acc, bj, a_held);
      }
    }
  }
  release();  // back to the init state unless a TileHold is open: a context switch then saves no tile data
}
#else
void panel(int64_t, int64_t, int64_t, const uint32_t*, int64_t, int64_t, const uint32_t*, int64_t, float, float*, int64_t,
           const float*) {
  fail("amx::panel: this build has no AMX kernel");
}
#endif

#if defined(DL_AMX_KERNEL)
TileHold::TileHold() { t_holds++; }
TileHold::~TileHold() {
  t_holds--;
  release();
}
#else
TileHold::TileHold() {}
TileHold::~TileHold() {}
#endif

#if defined(DL_AMX_KERNEL)
DL_AMX_TARGET double probe_loop(int64_t iters) {
  if (!usable()) return 0;
  alignas(64) static uint32_t ab[256];
  for (int i = 0; i < 256; i++) ab[i] = 0x3F803A80u;  // bf16 1.0 and 2^-10: the sums grow slowly, no infinities
  acquire();
  _tile_loadd(4, ab, 64), _tile_loadd(5, ab, 64), _tile_loadd(6, ab, 64), _tile_loadd(7, ab, 64);
  _tile_zero(0), _tile_zero(1), _tile_zero(2), _tile_zero(3);
  for (int64_t i = 0; i < iters; i++) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  alignas(64) float out[256];
  _tile_stored(0, out, 64);
  release();
  return out[0];
}
#else
double probe_loop(int64_t) { return 0; }
#endif

}  // namespace dl::amx
