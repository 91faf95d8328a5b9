// optim/schedule.h - learning-rate schedules as pure functions of the step.
//
// The step convention (used by every schedule here, by HF/torch LambdaLR and by LRA's flax code): `step` is
// the number of optimiser updates already done, so the first update uses lr(0). With linear warmup that
// first update has lr 0; a warmup of W steps reaches the full lr at step W (the (W+1)-th update).
//
// A schedule maps (step, base_lr) -> lr; apply_schedule() sets every group's lr from its own base_lr, so
// groups with different lrs (S4's A, B, dt at 1e-3) follow the same shape. With W = warmup, T = total:
//   constant                 base
//   linear_warmup(W)         base * min(1, step / W)                                       (W = 0: base)
//   warmup_linear_decay(W,T) base * step / W                     for step < W
//                            base * max(0, (T - step) / (T - W)) afterwards  (HF get_linear_schedule_with_warmup)
//   warmup_cosine(W,T,min)   base * step / W                     for step < W
//                            min + (base - min) * (1 + cos(pi * p)) / 2, p = clamp((step - W) / (T - W), 0, 1)
//                            (min = 0: HF get_cosine_schedule_with_warmup; min is an absolute lr like
//                            torch CosineAnnealingLR's eta_min, applied to every group)
//   inverse_sqrt(W)          base * min(1, step / W) / sqrt(max(step, W))
//                            This is LRA's "constant * linear_warmup * rsqrt_decay": the peak, at step W,
//                            is base / sqrt(W), NOT base. (fairseq's inverse_sqrt peaks at base; that is
//                            "constant * linear_warmup * rsqrt_normalized_decay" below.)
// LRA / T5 factor strings: the product of the named factors, e.g. "constant * linear_warmup * rsqrt_decay"
// (lra_benchmarks/utils/train_utils.py create_learning_rate_scheduler), with
//   constant                  base                (without it the lr does not depend on base at all)
//   linear_warmup             min(1, step / warmup_steps)
//   rsqrt_decay               1 / sqrt(max(step, warmup_steps))
//   rsqrt_normalized_decay    sqrt(warmup_steps) / sqrt(max(step, warmup_steps))
//   decay_every               decay_factor ^ floor(step / steps_per_decay)
//   cosine_decay              max(0, (1 + cos(pi * (p mod 1))) / 2),  p = max(0, (step - warmup_steps) / steps_per_cycle)
//   linear_decay              max(0, 1 - p),                          p as for cosine_decay
// linear_decay is not in LRA's own list; this is the form found in LRA-derived code, clamped at 0 here
// (that code lets it go negative past one cycle). An unknown factor is an error listing the known ones.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dl::optim {

class Optimizer;

class Schedule {
 public:
  Schedule(std::string description, std::function<double(int64_t step, double base_lr)> fn);
  double operator()(int64_t step, double base_lr) const;  // step must be >= 0
  const std::string& str() const { return desc_; }

 private:
  std::string desc_;
  std::function<double(int64_t, double)> fn_;
};

Schedule constant_schedule();
Schedule linear_warmup(int64_t warmup);
Schedule warmup_linear_decay(int64_t warmup, int64_t total);
Schedule warmup_cosine(int64_t warmup, int64_t total, double min_lr = 0.0);
Schedule inverse_sqrt(int64_t warmup);  // warmup >= 1

struct FactorParams {  // defaults as LRA's create_learning_rate_scheduler
  int64_t warmup_steps = 1000;
  double decay_factor = 0.5;
  int64_t steps_per_decay = 20000;
  int64_t steps_per_cycle = 100000;
};
Schedule factor_schedule(const std::string& factors, const FactorParams& p = {});
const std::vector<std::string>& known_factors();

// Choose a schedule by name, as configs do: "constant", "linear_warmup", "warmup_linear_decay",
// "warmup_cosine", "inverse_sqrt", or a factor string (anything containing '*', or a single known factor).
struct ScheduleConfig {
  std::string kind = "constant";
  int64_t warmup = 0, total = 0;
  double min_lr = 0;
  FactorParams factors;  // for factor strings; factors.warmup_steps is taken from `warmup` when that is > 0
};
Schedule make_schedule(const ScheduleConfig& c);

// Set every group's lr to s(step, group.base_lr).
void apply_schedule(Optimizer& opt, const Schedule& s, int64_t step);

}  // namespace dl::optim
