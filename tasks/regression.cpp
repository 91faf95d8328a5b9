// tasks/regression.cpp - the BIDMC stand-in, series -> tokens, and the .ts reader (see regression.h).
#include "tasks/regression.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <limits>
#include <numbers>

namespace dl::tasks {
namespace {

constexpr double kTwoPi = 2.0 * std::numbers::pi;

double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
double uniform(std::mt19937_64& rng, double lo, double hi) { return lo + (hi - lo) * uniform01(rng); }
double gaussian(std::mt19937_64& rng) {  // Box-Muller from rng() directly: the same noise with any standard library
  const double u1 = 1.0 - uniform01(rng), u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}
uint64_t mix64(uint64_t z) {  // splitmix64 finaliser: decorrelates per-example seeds
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A bump on the unit circle of the cardiac phase: exp(-d^2 / 2w^2) with d the wrapped distance of u from c.
double bump(double u, double c, double w) {
  double d = u - c;
  d -= std::floor(d + 0.5);  // into [-0.5, 0.5)
  return std::exp(-0.5 * d * d / (w * w));
}

}  // namespace

// ---- the generated stand-in ----------------------------------------------------------------

// Cardiac phase phi(t) = phi0 + (HR/60) (t - rsa / (2 pi f_r) (cos(2 pi f_r t + psi) - cos psi)): the integral of a
// beat rate (HR/60)(1 + rsa sin(2 pi f_r t + psi)) that swings with breathing; one beat per unit of phase.
PulseSeries make_pulse_series(const PulseConfig& c, std::mt19937_64& rng) {
  if (c.length < 2 || c.duration_s <= 0) throw DataError("pulse stand-in: length must be >= 2 and duration > 0");
  PulseSeries s;
  s.heart_rate = uniform(rng, c.min_hr, c.max_hr);
  s.respiratory_rate = uniform(rng, c.min_rr, c.max_rr);
  const double fc = s.heart_rate / 60.0, fr = s.respiratory_rate / 60.0;  // Hz
  const double rsa = uniform(rng, 0.0, c.max_rsa), am = uniform(rng, c.min_am, c.max_am);
  const double wander = uniform(rng, c.min_wander, c.max_wander), drift = uniform(rng, -c.max_drift, c.max_drift);
  const double noise = std::exp(uniform(rng, std::log(c.min_noise), std::log(c.max_noise)));
  const double psi = uniform(rng, 0.0, kTwoPi), wander_lag = uniform(rng, -0.5, 0.5), phi0 = uniform01(rng);
  // pulse shape: systolic peak, then the dicrotic wave
  const double sys_w = uniform(rng, 0.06, 0.10), dic_c = uniform(rng, 0.45, 0.60), dic_w = uniform(rng, 0.08, 0.14),
               dic_a = uniform(rng, 0.15, 0.5);
  s.signal.resize(size_t(c.length));
  const double dt = c.duration_s / c.length;
  for (int32_t i = 0; i < c.length; ++i) {
    const double t = i * dt, breath = kTwoPi * fr * t + psi;
    const double phi = phi0 + fc * (t - rsa / (kTwoPi * fr) * (std::cos(breath) - std::cos(psi)));
    const double u = phi - std::floor(phi);
    const double pulse = bump(u, 0.25, sys_w) + dic_a * bump(u, 0.25 + dic_c, dic_w);
    const double x = (1.0 + am * std::sin(breath)) * pulse + wander * std::sin(breath + wander_lag) +
                     drift * (t / c.duration_s - 0.5) + noise * gaussian(rng);
    s.signal[size_t(i)] = float(x);
  }
  return s;
}

Dataset make_pulse_dataset(const PulseConfig& c, int64_t num_examples, uint64_t seed, const std::string& name) {
  Dataset d;
  d.name = name;
  d.vocab_size = kRegressionLevels;
  d.max_len = c.length;
  d.examples.resize(size_t(num_examples));
  for (int64_t i = 0; i < num_examples; ++i) {
    std::mt19937_64 rng(mix64(seed ^ mix64(uint64_t(i) + 1)));  // example i can be regenerated alone
    PulseSeries s = make_pulse_series(c, rng);
    Example& e = d.examples[size_t(i)];
    e.tokens = quantise_series(s.signal);
    e.target_features = {float(c.target == PulseTarget::heart_rate ? s.heart_rate : s.respiratory_rate)};
  }
  return d;
}

// ---- series -> tokens ------------------------------------------------------------------------

std::vector<float> block_average(const std::vector<float>& x, int32_t out_len) {
  const size_t n = x.size();
  if (out_len <= 0 || size_t(out_len) >= n) return x;
  std::vector<float> y(static_cast<size_t>(out_len));
  for (size_t j = 0; j < size_t(out_len); ++j) {
    const size_t a = j * n / size_t(out_len), b = (j + 1) * n / size_t(out_len);
    double sum = 0;
    for (size_t i = a; i < b; ++i) sum += x[i];
    y[j] = float(sum / double(b - a));
  }
  return y;
}

std::vector<int32_t> quantise_series(const std::vector<float>& x) {
  std::vector<int32_t> t(x.size(), kRegressionLevels / 2);
  if (x.empty()) return t;
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  const double range = double(*hi) - double(*lo);
  if (!(range > 0)) return t;
  for (size_t i = 0; i < x.size(); ++i)
    t[i] = std::clamp(int32_t(std::lround((kRegressionLevels - 1) * (double(x[i]) - *lo) / range)), 0, kRegressionLevels - 1);
  return t;
}

// ---- the .ts format --------------------------------------------------------------------------
namespace {

std::string lower(std::string_view s) {
  std::string o(s);
  for (auto& ch : o) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return o;
}
std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}
std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) out.push_back(s.substr(start, i - start)), start = i + 1;
  return out;
}
// A whole field as a finite number; false when it is not one.
bool parse_number(std::string_view field, double& v) {
  std::string f(trim(field));
  if (f.empty()) return false;
  char* end = nullptr;
  v = std::strtod(f.c_str(), &end);
  return end == f.c_str() + f.size() && std::isfinite(v);
}
bool parse_bool(std::string_view v, bool& out) {
  std::string l = lower(trim(v));
  if (l == "true") return out = true, true;
  if (l == "false") return out = false, true;
  return false;
}

}  // namespace

TsFile parse_ts(std::string_view content, const std::string& name) {
  TsFile f;
  bool in_data = false, have_target_tag = false, univariate_set = false, univariate = false;
  int32_t declared_dims = 0;  // from @dimension(s), or 1 from @univariate true; 0 = take the first series'
  Lines lines(content);
  for (std::string_view raw; lines.next(raw);) {
    const std::string where = lines.where(name);
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    if (line.front() == '@') {
      const size_t sp = line.find_first_of(" \t");
      const std::string tag = lower(line.substr(0, sp));
      const std::string_view value = sp == std::string_view::npos ? std::string_view() : trim(line.substr(sp));
      if (in_data) throw DataError(where + ": tag " + tag + " after @data (every tag comes before the series)");
      bool b = false;
      if (tag == "@problemname") {
        f.problem = std::string(value);
      } else if (tag == "@timestamps") {
        if (!parse_bool(value, b)) throw DataError(where + ": @timeStamps expects true or false, found '" + std::string(value) + "'");
        if (b) throw DataError(where + ": time-stamped series ('(t,v)' tuples) are not supported; expected @timeStamps false");
      } else if (tag == "@univariate") {
        if (!parse_bool(value, univariate)) throw DataError(where + ": @univariate expects true or false, found '" + std::string(value) + "'");
        univariate_set = true;
        if (univariate) declared_dims = 1;
      } else if (tag == "@dimension" || tag == "@dimensions") {
        double v = 0;
        if (!parse_number(value, v) || v < 1 || v != std::floor(v))
          throw DataError(where + ": " + tag + " expects a positive whole number of dimensions, found '" + std::string(value) + "'");
        if (univariate_set && univariate && v != 1) throw DataError(where + ": " + tag + " " + std::string(value) + " contradicts @univariate true");
        declared_dims = int32_t(v);
      } else if (tag == "@targetlabel") {
        if (!parse_bool(value, b)) throw DataError(where + ": @targetLabel expects true or false, found '" + std::string(value) + "'");
        if (!b) throw DataError(where + ": @targetLabel false: the file has no regression targets (expected @targetLabel true)");
        have_target_tag = true;
      } else if (tag == "@classlabel") {
        parse_bool(value.substr(0, value.find_first_of(" \t")), b);  // "@classLabel true <class> <class> ..."
        if (b) throw DataError(where + ": @classLabel true: a classification file, not a regression one (expected @targetLabel true)");
      } else if (tag == "@data") {
        if (!have_target_tag) throw DataError(where + ": @data before '@targetLabel true' (expected a regression file's header)");
        in_data = true;
      } else if (tag == "@equallength" || tag == "@serieslength" || tag == "@missing") {
        // informational; lengths and missing values are checked on the series themselves
      } else {
        throw DataError(where + ": unknown tag " + tag +
                        " (expected @problemName, @timeStamps, @univariate, @dimension(s), @equalLength, @seriesLength, "
                        "@missing, @targetLabel, @classLabel or @data)");
      }
      continue;
    }
    if (!in_data) throw DataError(where + ": a series before @data (expected a @tag, a # comment or @data)");
    std::vector<std::string_view> fields = split(line, ':');
    if (fields.size() < 2) throw DataError(where + ": expected '<values>:<target>' (dimensions separated by ':', the target last)");
    TsSeries s;
    s.line = lines.number();
    if (!parse_number(fields.back(), s.target))
      throw DataError(where + ": the target '" + std::string(trim(fields.back())) + "' (after the last ':') is not a number");
    const int32_t dims = int32_t(fields.size() - 1);
    const int32_t want = f.dimensions > 0 ? f.dimensions : declared_dims;
    if (want > 0 && dims != want)
      throw DataError(where + ": " + std::to_string(dims) + " dimension(s), expected " + std::to_string(want) +
                      (f.dimensions > 0 ? " as in the series before" : " as declared in the header"));
    f.dimensions = dims;
    for (int32_t d = 0; d < dims; ++d) {
      std::vector<std::string_view> values = split(fields[size_t(d)], ',');
      std::vector<float> x(values.size());
      std::vector<bool> missing(values.size(), false);
      size_t present = 0;
      for (size_t i = 0; i < values.size(); ++i) {
        double v = 0;
        if (trim(values[i]) == "?") {
          missing[i] = true;
          continue;
        }
        if (!parse_number(values[i], v) || std::abs(v) > std::numeric_limits<float>::max())
          throw DataError(where + ": dimension " + std::to_string(d + 1) + ", value " + std::to_string(i + 1) + " '" +
                          std::string(trim(values[i])) + "' is not a number in float range (expected comma-separated numbers or '?')");
        x[i] = float(v), ++present;
      }
      if (present == 0) throw DataError(where + ": dimension " + std::to_string(d + 1) + " has no values (every one is missing)");
      // a missing value takes the last value before it (the first present one at the start)
      float last = 0;
      for (size_t i = 0; i < x.size(); ++i)
        if (!missing[i]) {
          last = x[i];
          break;
        }
      for (size_t i = 0; i < x.size(); ++i) {
        if (missing[i]) x[i] = last;
        else last = x[i];
      }
      if (d > 0 && x.size() != s.dims[0].size())
        throw DataError(where + ": dimension " + std::to_string(d + 1) + " has " + std::to_string(x.size()) +
                        " values, dimension 1 has " + std::to_string(s.dims[0].size()) +
                        " (every dimension of a series must have the same length)");
      s.dims.push_back(std::move(x));
    }
    f.series.push_back(std::move(s));
  }
  if (!in_data) throw DataError(name + ": no @data line (expected a .ts header ending in @data, then one series per line)");
  if (f.series.empty()) throw DataError(name + ": no series after @data");
  return f;
}

TsFile read_ts(const std::string& path) { return parse_ts(read_file(path, ".ts file"), path); }

Dataset ts_dataset(const TsFile& file, int32_t seq_len, const std::string& name) {
  Dataset d;
  d.name = name;
  d.vocab_size = kRegressionLevels;
  for (const TsSeries& s : file.series) {
    std::vector<std::vector<int32_t>> q;
    for (const auto& x : s.dims) q.push_back(quantise_series(block_average(x, seq_len)));
    Example e;
    const size_t T = q.front().size();
    e.tokens.reserve(T * q.size());
    for (size_t t = 0; t < T; ++t)  // interleave the dimensions per time step
      for (const auto& dim : q) e.tokens.push_back(dim[t]);
    e.target_features = {float(s.target)};
    d.max_len = std::max<int32_t>(d.max_len, int32_t(e.tokens.size()));
    d.examples.push_back(std::move(e));
  }
  return d;
}

TaskData load_ts_regression(const std::string& dir, const std::string& problem, int32_t seq_len) {
  namespace fs = std::filesystem;
  auto find = [&](const std::string& split) {
    for (const fs::path& p : {fs::path(dir) / (problem + "_" + split + ".ts"), fs::path(dir) / problem / (problem + "_" + split + ".ts")})
      if (fs::exists(p)) return p.string();
    throw DataError(dir + ": no " + problem + "_" + split + ".ts (looked in the folder and in " + problem +
                    "/; the Monash/UEA regression archive's files, e.g. " + problem + "_TRAIN.ts and " + problem + "_TEST.ts)");
  };
  const std::string train_path = find("TRAIN"), test_path = find("TEST");
  TsFile train = read_ts(train_path), test = read_ts(test_path);
  if (train.dimensions != test.dimensions)
    throw DataError(test_path + ": " + std::to_string(test.dimensions) + " dimension(s), but " + train_path + " has " +
                    std::to_string(train.dimensions));
  if (train.series.size() < 2) throw DataError(train_path + ": needs at least 2 series (a validation part is carved from it)");
  const size_t val = std::max<size_t>(1, train.series.size() / 7);
  TsFile val_file;
  val_file.problem = train.problem, val_file.dimensions = train.dimensions;
  val_file.series.assign(std::make_move_iterator(train.series.end() - long(val)), std::make_move_iterator(train.series.end()));
  train.series.resize(train.series.size() - val);
  return {ts_dataset(train, seq_len, problem + "/train"), ts_dataset(val_file, seq_len, problem + "/val"),
          ts_dataset(test, seq_len, problem + "/test")};
}

// ---- registry makers -------------------------------------------------------------------------
namespace {

Dataset cap(Dataset d, int64_t n) {
  if (n > 0 && d.examples.size() > size_t(n)) d.examples.resize(size_t(n));
  return d;
}
int64_t or_default(int64_t v, int64_t d) { return v > 0 ? v : d; }

TaskData vital_sign_task(const TaskConfig& c, const std::string& problem, const char* short_name, PulseTarget target) {
  if (!c.data_path.empty()) {
    TaskData t = load_ts_regression(c.data_path, problem, c.seq_len);
    return {cap(std::move(t.train), c.train_size), cap(std::move(t.val), c.val_size), cap(std::move(t.test), c.test_size)};
  }
  PulseConfig pc;
  pc.target = target;
  if (c.seq_len > 0) pc.length = c.seq_len;
  const std::string n = short_name;
  return {make_pulse_dataset(pc, or_default(c.train_size, 5000), c.seed, n + "/train"),
          make_pulse_dataset(pc, or_default(c.val_size, 800), c.seed + 1, n + "/val"),
          make_pulse_dataset(pc, or_default(c.test_size, 2000), c.seed + 2, n + "/test")};
}

}  // namespace

TaskData bidmc_hr_task(const TaskConfig& c) { return vital_sign_task(c, "BIDMC32HR", "bidmc_hr", PulseTarget::heart_rate); }
TaskData bidmc_rr_task(const TaskConfig& c) {
  return vital_sign_task(c, "BIDMC32RR", "bidmc_rr", PulseTarget::respiratory_rate);
}
TaskData bidmc_spo2_task(const TaskConfig& c) {
  if (c.data_path.empty())
    throw DataError("bidmc_spo2: there is no generated stand-in for SpO2; set data_path to the folder of BIDMC32SpO2_TRAIN.ts "
                    "and BIDMC32SpO2_TEST.ts");
  return vital_sign_task(c, "BIDMC32SpO2", "bidmc_spo2", PulseTarget::heart_rate);
}

}  // namespace dl::tasks
