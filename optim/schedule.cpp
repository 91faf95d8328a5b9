// optim/schedule.cpp - see schedule.h for every formula and the step convention.
#include "optim/schedule.h"

#include <cmath>
#include <sstream>

#include "optim/optimizer.h"

namespace dl::optim {

Schedule::Schedule(std::string d, std::function<double(int64_t, double)> fn) : desc_(std::move(d)), fn_(std::move(fn)) {}

double Schedule::operator()(int64_t step, double base_lr) const {
  if (step < 0) fail("schedule " + desc_ + ": negative step " + std::to_string(step));
  return fn_(step, base_lr);
}

static void need(bool ok, const std::string& msg) {
  if (!ok) fail("schedule: " + msg);
}

Schedule constant_schedule() {
  return Schedule("constant", [](int64_t, double base) { return base; });
}

Schedule linear_warmup(int64_t w) {
  need(w >= 0, "linear_warmup: warmup must be >= 0");
  return Schedule("linear_warmup(" + std::to_string(w) + ")",
                  [w](int64_t s, double base) { return w == 0 ? base : base * std::min(1.0, (double)s / (double)w); });
}

Schedule warmup_linear_decay(int64_t w, int64_t total) {
  need(w >= 0 && total > w, "warmup_linear_decay: needs 0 <= warmup < total");
  return Schedule("warmup_linear_decay(" + std::to_string(w) + ", " + std::to_string(total) + ")",
                  [w, total](int64_t s, double base) {
                    if (s < w) return base * (double)s / (double)w;
                    return base * std::max(0.0, (double)(total - s) / (double)(total - w));
                  });
}

Schedule warmup_cosine(int64_t w, int64_t total, double min_lr) {
  need(w >= 0 && total > w, "warmup_cosine: needs 0 <= warmup < total");
  need(min_lr >= 0, "warmup_cosine: min_lr must be >= 0");
  std::ostringstream d;
  d << "warmup_cosine(" << w << ", " << total << ", min_lr " << min_lr << ")";
  return Schedule(d.str(), [w, total, min_lr](int64_t s, double base) {
    if (s < w) return base * (double)s / (double)w;
    double p = std::clamp((double)(s - w) / (double)(total - w), 0.0, 1.0);
    return min_lr + (base - min_lr) * 0.5 * (1.0 + std::cos(M_PI * p));
  });
}

Schedule inverse_sqrt(int64_t w) {
  need(w >= 1, "inverse_sqrt: warmup must be >= 1 (lr / sqrt(max(step, warmup)) is infinite at step 0 otherwise)");
  return Schedule("inverse_sqrt(" + std::to_string(w) + ")", [w](int64_t s, double base) {
    return base * std::min(1.0, (double)s / (double)w) / std::sqrt((double)std::max(s, w));
  });
}

const std::vector<std::string>& known_factors() {
  static const std::vector<std::string> k{"constant",    "linear_warmup", "rsqrt_decay", "rsqrt_normalized_decay",
                                          "decay_every", "cosine_decay",  "linear_decay"};
  return k;
}

static std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

Schedule factor_schedule(const std::string& spec, const FactorParams& p) {
  std::vector<std::string> names;
  std::stringstream ss(spec);
  for (std::string part; std::getline(ss, part, '*');) names.push_back(trim(part));
  for (auto& n : names) {
    bool known = false;
    for (auto& k : known_factors()) known |= n == k;
    if (!known) {
      std::string list;
      for (auto& k : known_factors()) list += (list.empty() ? "" : ", ") + k;
      fail("schedule: unknown factor '" + n + "' in \"" + spec + "\"; known factors: " + list);
    }
    if ((n == "linear_warmup" || n == "rsqrt_decay" || n == "rsqrt_normalized_decay") && p.warmup_steps <= 0)
      fail("schedule: factor '" + n + "' in \"" + spec + "\" needs warmup_steps > 0");
    if (n == "decay_every" && p.steps_per_decay <= 0) fail("schedule: decay_every needs steps_per_decay > 0");
    if ((n == "cosine_decay" || n == "linear_decay") && p.steps_per_cycle <= 0)
      fail("schedule: " + n + " needs steps_per_cycle > 0");
  }
  std::ostringstream d;
  d << "factors(\"" << spec << "\", warmup_steps " << p.warmup_steps << ")";
  return Schedule(d.str(), [names, p](int64_t step, double base) {
    const double s = (double)step, w = (double)p.warmup_steps;
    double r = 1.0;
    for (auto& n : names) {
      if (n == "constant") r *= base;
      else if (n == "linear_warmup") r *= std::min(1.0, s / w);
      else if (n == "rsqrt_decay") r /= std::sqrt(std::max(s, w));
      else if (n == "rsqrt_normalized_decay") r *= std::sqrt(w) / std::sqrt(std::max(s, w));
      else if (n == "decay_every") r *= std::pow(p.decay_factor, (double)(step / p.steps_per_decay));
      else {  // cosine_decay, linear_decay
        double prog = std::max(0.0, (s - w) / (double)p.steps_per_cycle);
        if (n == "cosine_decay") r *= std::max(0.0, 0.5 * (1.0 + std::cos(M_PI * std::fmod(prog, 1.0))));
        else r *= std::max(0.0, 1.0 - prog);
      }
    }
    return r;
  });
}

Schedule make_schedule(const ScheduleConfig& c) {
  const std::string& k = c.kind;
  if (k == "constant") return constant_schedule();
  if (k == "linear_warmup") return linear_warmup(c.warmup);
  if (k == "warmup_linear_decay") return warmup_linear_decay(c.warmup, c.total);
  if (k == "warmup_cosine") return warmup_cosine(c.warmup, c.total, c.min_lr);
  if (k == "inverse_sqrt") return inverse_sqrt(c.warmup);
  FactorParams p = c.factors;
  if (c.warmup > 0) p.warmup_steps = c.warmup;
  if (k.find('*') != std::string::npos) return factor_schedule(k, p);
  for (auto& f : known_factors())
    if (k == f) return factor_schedule(k, p);
  std::string list;
  for (auto& f : known_factors()) list += ", " + f;
  fail("schedule: unknown schedule '" + k +
       "'; known: constant, linear_warmup, warmup_linear_decay, warmup_cosine, inverse_sqrt, or a factor string "
       "\"a * b * ...\" of" +
       list.substr(1));
}

void apply_schedule(Optimizer& opt, const Schedule& s, int64_t step) {
  for (size_t g = 0; g < opt.num_groups(); g++) opt.set_lr(g, s(step, opt.group(g).base_lr));
}

}  // namespace dl::optim
