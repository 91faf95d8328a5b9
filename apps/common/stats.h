// apps/common/stats.h - means and standard errors, so a table tells an effect from noise.
//
//   over seeds (n >= 2):  mean, se = s / sqrt(n) with the sample standard deviation s (n - 1 in the denominator)
//   one seed:             the test split's binomial standard error sqrt(p (1 - p) / N) for an accuracy p on N
//                         examples (what the accuracy would scatter by on another test set of that size)
//   a difference b - a of two arms run on the same seeds (the same data and initialisation per seed): the mean
//   and standard error of the per-seed differences (paired); with one seed, sqrt(se_a^2 + se_b^2) of the two
//   binomial errors.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dl::harness {

struct MeanSE {
  double mean = 0, se = 0;
  int n = 0;              // how many values (seeds)
  bool binomial = false;  // se is the binomial error of one seed
};

MeanSE mean_se(const std::vector<double>& xs);  // se 0 when n < 2
double binomial_se(double p, int64_t n);        // sqrt(p (1 - p) / n); 0 when n <= 0
MeanSE accuracy_mean_se(const std::vector<double>& accs, int64_t n_test);
// b - a per seed; a and b in the same seed order and of the same length.
MeanSE paired_difference(const std::vector<double>& a, const std::vector<double>& b, int64_t n_test);

// Whether a difference stands out of the noise: +1 when mean > 2 se, -1 when mean < -2 se, 0 when within (or when
// nothing is known: no value, or one value without an error). With n >= 2 and se == 0 every seed agreed exactly, so
// any nonzero mean counts.
int beyond_two_se(const MeanSE& d);

// "37.9 ± 1.2" with the values scaled (100: accuracies in %) to `digits` decimals; sign: "+2.1 ± 1.0"; "-" for n = 0.
std::string format_mean_se(const MeanSE& m, double scale = 100, int digits = 1, bool sign = false);

}  // namespace dl::harness
