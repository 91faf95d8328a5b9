// apps/common/stats.cpp - see stats.h.
#include "apps/common/stats.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace dl::harness {

MeanSE mean_se(const std::vector<double>& xs) {
  MeanSE m;
  m.n = (int)xs.size();
  if (xs.empty()) return m;
  double s = 0;
  for (double x : xs) s += x;
  m.mean = s / m.n;
  if (m.n < 2) return m;
  double ss = 0;
  for (double x : xs) ss += (x - m.mean) * (x - m.mean);
  m.se = std::sqrt(ss / (m.n - 1)) / std::sqrt((double)m.n);
  return m;
}

double binomial_se(double p, int64_t n) { return n > 0 ? std::sqrt(p * (1 - p) / (double)n) : 0.0; }

MeanSE accuracy_mean_se(const std::vector<double>& accs, int64_t n_test) {
  MeanSE m = mean_se(accs);
  if (m.n == 1) m.se = binomial_se(m.mean, n_test), m.binomial = true;
  return m;
}

int beyond_two_se(const MeanSE& d) {
  const bool known = d.n >= 2 || (d.n == 1 && d.se > 0);
  if (!known) return 0;
  return d.mean > 2 * d.se ? 1 : d.mean < -2 * d.se ? -1 : 0;
}

MeanSE paired_difference(const std::vector<double>& a, const std::vector<double>& b, int64_t n_test) {
  if (a.size() != b.size())
    throw std::logic_error("paired_difference: " + std::to_string(a.size()) + " vs " + std::to_string(b.size()) + " values");
  if (a.size() == 1) {
    MeanSE m{b[0] - a[0], std::hypot(binomial_se(a[0], n_test), binomial_se(b[0], n_test)), 1, true};
    return m;
  }
  std::vector<double> d(a.size());
  for (size_t i = 0; i < a.size(); i++) d[i] = b[i] - a[i];
  return mean_se(d);
}

std::string format_mean_se(const MeanSE& m, double scale, int digits, bool sign) {
  char buf[96];
  if (m.n == 0) return "-";
  std::snprintf(buf, sizeof buf, sign ? "%+.*f ± %.*f" : "%.*f ± %.*f", digits, m.mean * scale, digits, m.se * scale);
  return buf;
}

}  // namespace dl::harness
