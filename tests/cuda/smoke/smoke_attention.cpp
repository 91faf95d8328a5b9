// tests/cuda/smoke/smoke_attention.cpp - the device's attention primitive (cuda/ops/attention_tc.cuh: the tensor-core
// tiles, and the rows' kernels of cuda/ops/attention.cuh with DL_ATTENTION_TC=0) through nn::flash_attention, forward
// and backward, against the CPU's flash_attention on the same qkv and output gradient:
//   attention.tiles.h16 / h32 / h64   the tiles at each head size they take, masks mixed in (causal, key padding with a
//                                     row of all padding, prefix-LM, a window, dropout), lengths ending in a partial tile
//   attention.rows.h32                the rows' kernels on the same problem as tiles.h32
// Error: scaled_err (smoke.h) over out and dqkv; 3xTF32 products keep float32's accuracy (1e-4; one TF32 product alone
// would be near 1e-3). These items are small, to run under compute-sanitizer's racecheck and synccheck (gpu_check.sh).
//   speed.attention                   one forward + backward at B 8, 4 heads of 32, T 1024, causal (the Transformer
//                                     workload's heads): the tiles' and the rows' milliseconds (median of 5 after one
//                                     warm-up) and their ratio in the detail; its error is the tiles' output against the
//                                     rows' (not the CPU's: too slow there)
//   speed.attention.h64               the same at B 4, 8 heads of 64, T 2000, padded keys (the LRA paper preset's ListOps)
#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "nn/fused/flash_attention.h"
#include "tests/cuda/smoke/smoke.h"

namespace dl::smoke {
namespace {

struct Problem {
  int64_t B, T, C, heads;
  bool causal = false, mask = false, prefix = false;
  double p = 0;
  int64_t window = 0;
};

struct Result {
  Tensor out, dqkv;
};

// One forward and backward of flash_attention on the inputs' device (the same dropout draw on any: the generator's
// seed); the results stay there
Result run(const Problem& pr, const Tensor& qkv, const Tensor& dy, const Tensor& km, const Tensor& prefix) {
  Generator g(5);
  Var x(qkv, true);
  Var y = nn::flash_attention(x, pr.heads, pr.causal, pr.p, pr.p > 0, g, km, prefix, pr.window);
  y.backward(dy);
  return {y.data(), x.grad()};
}
std::vector<double> values(const Result& r) { return f64_values({r.out, r.dqkv}); }  // on the host

struct Inputs {
  Tensor qkv, dy, km, prefix;
  Inputs to(Device d) const { return {qkv.to(d), dy.to(d), km.defined() ? km.to(d) : km, prefix}; }
};
Inputs inputs(const Problem& pr) {
  Generator g(17);
  Inputs in{randn({pr.B, pr.T, 3 * pr.C}, g), randn({pr.B, pr.T, pr.C}, g), Tensor(), Tensor()};
  if (pr.mask) {  // example b keeps its first T - 5 b positions; the last example is all padding
    std::vector<float> m(pr.B * pr.T, 1.f);
    for (int64_t b = 0; b < pr.B; b++)
      for (int64_t t = b == pr.B - 1 ? 0 : std::max<int64_t>(0, pr.T - 5 * b); t < pr.T; t++) m[b * pr.T + t] = 0.f;
    in.km = from_vector(m, {pr.B, pr.T});
  }
  if (pr.prefix) {
    std::vector<int64_t> P(pr.B);
    for (int64_t b = 0; b < pr.B; b++) P[b] = (b * 7) % (pr.T + 1);
    in.prefix = from_vector(P, {pr.B});
  }
  return in;
}

// DL_ATTENTION_TC for the duration of a scope ("0": the rows' kernels; unset: the tiles where they apply)
struct Path {
  explicit Path(bool tiles) {
    if (tiles) unsetenv("DL_ATTENTION_TC");
    else setenv("DL_ATTENTION_TC", "0", 1);
  }
  ~Path() { unsetenv("DL_ATTENTION_TC"); }
};

Outcome agree_item(const std::vector<Problem>& problems, bool tiles) {
  Outcome o;
  o.tol = 1e-4;
  Path path(tiles);
  for (const Problem& pr : problems) {
    const Inputs in = inputs(pr);
    const Result cpu = run(pr, in.qkv, in.dy, in.km, in.prefix);
    const Inputs d = in.to(Device::cuda);
    const Result dev = run(pr, d.qkv, d.dy, d.km, d.prefix);
    sync_check("flash_attention on the device");
    o.max_err = std::max(o.max_err, scaled_err(values(dev), values(cpu)));
    o.detail += (o.detail.empty() ? "" : ", ") + std::to_string(pr.B) + "x" + std::to_string(pr.T) + " C " +
                std::to_string(pr.C) + "/" + std::to_string(pr.heads) + (pr.causal ? " causal" : "") +
                (pr.mask ? " padding" : "") + (pr.prefix ? " prefix" : "") + (pr.p > 0 ? " dropout" : "") +
                (pr.window ? " window " + std::to_string(pr.window) : "");
  }
  return o;
}

std::vector<Problem> problems(int64_t HS) {
  const int64_t C = 2 * HS;
  return {{3, 37, C, 2, true, true}, {2, 29, C, 2, false, true, true, 0.2}, {2, 45, C, 2, false, false, false, 0, 6}};
}

double median_ms(const std::function<void()>& f) {
  f();  // warm-up
  std::vector<double> ms;
  for (int i = 0; i < 5; i++) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[2];
}

Outcome speed_item(const Problem& pr) {
  Outcome o;
  o.tol = 1e-4;
  const Inputs in = inputs(pr).to(Device::cuda);
  Result r[2];
  double ms[2];
  for (int tiles = 0; tiles < 2; tiles++) {
    Path path(tiles);
    ms[tiles] = median_ms([&] { r[tiles] = run(pr, in.qkv, in.dy, in.km, in.prefix); });
  }
  o.max_err = scaled_err(values(r[1]), values(r[0]));
  // forward 4 B T^2 C (2 B T^2 C causal), the backward about 2.5x that
  const double flop = 3.5 * 4.0 * pr.B * pr.T * pr.T * pr.C / (pr.causal ? 2 : 1);
  char buf[300];
  std::snprintf(buf, sizeof buf,
                "B %lld, %lld heads of %lld, T %lld, %s, forward + backward: tiles %.2f ms (%.2f TFLOP/s), "
                "rows %.2f ms (%.2f), rows / tiles %.2fx",
                (long long)pr.B, (long long)pr.heads, (long long)(pr.C / pr.heads), (long long)pr.T,
                pr.causal ? "causal" : "keys padded", ms[1], flop / ms[1] / 1e9, ms[0], flop / ms[0] / 1e9, ms[0] / ms[1]);
  o.detail = buf;
  return o;
}

}  // namespace

void run_attention_items(Report& r, const std::string& skip) {
  r.run("attention.tiles.h16", [] { return agree_item(problems(16), true); }, skip);
  r.run("attention.tiles.h32", [] { return agree_item(problems(32), true); }, skip);
  r.run("attention.tiles.h64", [] { return agree_item(problems(64), true); }, skip);
  r.run("attention.rows.h32", [] { return agree_item(problems(32), false); }, skip);
  r.run("speed.attention", [] { return speed_item({8, 1024, 128, 4, true}); }, skip);  // the Transformer workload's heads
  r.run("speed.attention.h64", [] { return speed_item({4, 2000, 512, 8, false, true}); }, skip);  // the paper preset's
}

}  // namespace dl::smoke
