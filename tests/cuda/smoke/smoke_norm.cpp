// tests/cuda/smoke/smoke_norm.cpp - layer_norm and rms_norm on the device (cuda/ops/nn.cuh: one warp a row, partial sums
// in the warp's shared memory), forward and every gradient, against the CPU's (tensor/nn_kernels.h) on the same input:
//   norm.layer_norm.f32 / norm.rms_norm.f32   rows of 512 (the paper preset's width) and 130 (lanes with 4 and 5
//                                              columns), with weight and bias
// Error: scaled_err (smoke.h) over y, rstd (and mean), dx, dweight (and dbias); float64 sums on both sides, so the
// difference is float32 rounding (1e-5). Small, to run under compute-sanitizer's racecheck and synccheck (gpu_check.sh).
#include "tensor/elementwise.h"
#include "tensor/nn_kernels.h"
#include "tests/cuda/smoke/smoke.h"

namespace dl::smoke {
namespace {

Outcome norm_item(bool center) {
  Outcome o;
  o.tol = 1e-5;
  Generator g(23);
  for (int64_t C : {512, 130}) {
    const int64_t R = 37;
    Tensor x = add_scalar(randn({R, C}, g), 0.5), w = randn({C}, g), b = randn({C}, g), dy = randn({R, C}, g);
    const Device d = Device::cuda;
    NormOut c = center ? layer_norm(x, w, b, 1e-5) : rms_norm(x, w, 1e-5);
    NormOut v = center ? layer_norm(x.to(d), w.to(d), b.to(d), 1e-5) : rms_norm(x.to(d), w.to(d), 1e-5);
    NormGrads gc = center ? layer_norm_backward(dy, x, c.mean, c.rstd, w, true, true, true)
                          : rms_norm_backward(dy, x, c.rstd, w, true, true);
    NormGrads gv = center ? layer_norm_backward(dy.to(d), x.to(d), v.mean, v.rstd, w.to(d), true, true, true)
                          : rms_norm_backward(dy.to(d), x.to(d), v.rstd, w.to(d), true, true);
    sync_check(center ? "layer_norm" : "rms_norm");
    o.max_err = std::max(o.max_err, scaled_err(f64_values({v.y, v.mean, v.rstd, gv.dx, gv.dweight, gv.dbias}),
                                                f64_values({c.y, c.mean, c.rstd, gc.dx, gc.dweight, gc.dbias})));
    o.detail += (o.detail.empty() ? "rows of " : ", ") + std::to_string(C);
  }
  return o;
}

}  // namespace

void run_norm_items(Report& r, const std::string& skip) {
  r.run("norm.layer_norm.f32", [] { return norm_item(true); }, skip);
  r.run("norm.rms_norm.f32", [] { return norm_item(false); }, skip);
}

}  // namespace dl::smoke
