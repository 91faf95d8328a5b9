// tests/tasks_lra/test_regression.cpp - the BIDMC stand-in (shapes, determinism, a label a spectrum recovers), series
// -> tokens, and the .ts reader on small files written here (values, interleaving, the validation carve, bad files).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "tasks/regression.h"
#include "tasks/speech.h"
#include "test_util.h"

using namespace dl::tasks;
using dl::tasks::testing::data_error_message;
using dl::tasks::testing::TempDir;
using dl::tasks::testing::write_file;

namespace {

// Power of the de-meaned series at frequency f (Hz), a plain DFT term.
double power_at(const std::vector<int32_t>& x, double mean, double fs, double f) {
  double re = 0, im = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double a = 2 * std::numbers::pi * f * double(i) / fs;
    re += (x[i] - mean) * std::cos(a), im += (x[i] - mean) * std::sin(a);
  }
  return re * re + im * im;
}

// The frequency (Hz) in [lo, hi], on a 0.005 Hz grid, whose first `harmonics` multiples hold the most power (one:
// the spectral peak; more: a harmonic sum, which a pulse wave with a strong second harmonic needs).
double spectral_peak(const std::vector<int32_t>& x, double fs, double lo, double hi, int harmonics) {
  double mean = 0;
  for (int32_t v : x) mean += v;
  mean /= double(x.size());
  double best = lo, best_power = -1;
  for (double f = lo; f <= hi; f += 0.005) {
    double p = 0;
    for (int k = 1; k <= harmonics; ++k) p += power_at(x, mean, fs, k * f);
    if (p > best_power) best_power = p, best = f;
  }
  return best;
}

double correlation(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = double(a.size());
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += a[i] / n, mb += b[i] / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) sab += (a[i] - ma) * (b[i] - mb), saa += (a[i] - ma) * (a[i] - ma), sbb += (b[i] - mb) * (b[i] - mb);
  return sab / std::sqrt(saa * sbb);
}

// How well a spectral estimate in [lo, hi] Hz (times 60: per minute) recovers the label: correlation and median error.
void spectrum_recovers(PulseTarget target, double lo, double hi, int harmonics, double min_corr, double max_median_err) {
  PulseConfig c;
  c.length = 1000;  // 32 s at 31.25 Hz
  c.target = target;
  Dataset d = make_pulse_dataset(c, 120, 11, "t");
  std::vector<double> est, label, err;
  for (auto& e : d.examples) {
    est.push_back(60 * spectral_peak(e.tokens, c.length / c.duration_s, lo, hi, harmonics));
    label.push_back(e.target_features[0]);
    err.push_back(std::abs(est.back() - label.back()));
  }
  std::sort(err.begin(), err.end());
  EXPECT_GT(correlation(est, label), min_corr);
  EXPECT_LT(err[err.size() / 2], max_median_err);
}

const char* kHeader = "# a comment\n@problemName Tiny\n@timeStamps false\n@univariate false\n@dimensions 2\n@equalLength true\n"
                      "@seriesLength 4\n@targetLabel true\n@data\n";

}  // namespace

TEST(PulseStandIn, ShapesRangesAndDeterminism) {
  PulseConfig c;
  c.length = 500;
  Dataset a = make_pulse_dataset(c, 30, 3, "a"), b = make_pulse_dataset(c, 30, 3, "b"), other = make_pulse_dataset(c, 30, 4, "o");
  ASSERT_EQ(a.examples.size(), 30u);
  EXPECT_EQ(a.vocab_size, 256);
  EXPECT_EQ(a.num_classes, 0);
  EXPECT_EQ(a.max_len, 500);
  int differ = 0;
  for (size_t i = 0; i < a.examples.size(); ++i) {
    const Example& e = a.examples[i];
    ASSERT_EQ(e.tokens.size(), 500u);
    ASSERT_EQ(e.target_features.size(), 1u);
    EXPECT_EQ(e.label, -1);
    EXPECT_GE(e.target_features[0], c.min_hr);
    EXPECT_LE(e.target_features[0], c.max_hr);
    for (int32_t t : e.tokens) ASSERT_TRUE(t >= 0 && t < 256);
    EXPECT_EQ(*std::min_element(e.tokens.begin(), e.tokens.end()), 0);  // each series spans the 256 levels
    EXPECT_EQ(*std::max_element(e.tokens.begin(), e.tokens.end()), 255);
    EXPECT_EQ(e.tokens, b.examples[i].tokens);
    EXPECT_EQ(e.target_features, b.examples[i].target_features);
    differ += e.target_features != other.examples[i].target_features;
  }
  EXPECT_EQ(differ, 30);
  // the registry's task: separate streams per split, the respiratory target in its own range
  TaskConfig tc;
  tc.seq_len = 256, tc.train_size = 10, tc.val_size = 10, tc.test_size = 10;
  TaskData t = bidmc_rr_task(tc);
  EXPECT_EQ(t.train.examples[0].tokens.size(), 256u);
  EXPECT_NE(t.train.examples[0].target_features, t.val.examples[0].target_features);
  EXPECT_NE(t.val.examples[0].target_features, t.test.examples[0].target_features);
  for (auto& e : t.train.examples) EXPECT_TRUE(e.target_features[0] >= 8 && e.target_features[0] <= 30);
  EXPECT_NE(data_error_message([] { bidmc_spo2_task(TaskConfig{}); }).find("set data_path"), std::string::npos);
}

// The label is in the signal: the strongest frequency of the series in the band of the rate is the rate.
TEST(PulseStandIn, HeartRateIsTheSpectralPeak) { spectrum_recovers(PulseTarget::heart_rate, 0.75, 2.3, 2, 0.95, 3.0); }
TEST(PulseStandIn, RespiratoryRateIsRecoverable) { spectrum_recovers(PulseTarget::respiratory_rate, 0.12, 0.52, 1, 0.8, 3.0); }

TEST(SeriesTokens, BlockAverageAndQuantise) {
  EXPECT_EQ(block_average({1, 3, 5, 7, 9, 11}, 3), (std::vector<float>{2, 6, 10}));
  EXPECT_EQ(block_average({1, 2, 3, 4, 5}, 2), (std::vector<float>{1.5f, 4}));  // blocks [0, 2) and [2, 5)
  EXPECT_EQ(block_average({1, 2}, 0), (std::vector<float>{1, 2}));
  EXPECT_EQ(quantise_series({-1, 0, 1}), (std::vector<int32_t>{0, 128, 255}));
  EXPECT_EQ(quantise_series({2, 2}), (std::vector<int32_t>{128, 128}));
}

TEST(TsReader, ReadsValuesTargetsAndInterleavesDimensions) {
  TsFile f = parse_ts(std::string(kHeader) + "0,1,2,3:3,2,1,0:72.5\n\n1,1,?,1:0,2,4,6:-1e1\n", "tiny.ts");
  EXPECT_EQ(f.problem, "Tiny");
  EXPECT_EQ(f.dimensions, 2);
  ASSERT_EQ(f.series.size(), 2u);
  EXPECT_EQ(f.series[0].target, 72.5);
  EXPECT_EQ(f.series[1].target, -10);
  EXPECT_EQ(f.series[1].line, 12);
  EXPECT_EQ(f.series[1].dims[0], (std::vector<float>{1, 1, 1, 1}));  // '?' takes the value before it
  Dataset d = ts_dataset(f, 0, "tiny/train");
  EXPECT_EQ(d.examples[0].tokens, (std::vector<int32_t>{0, 255, 85, 170, 170, 85, 255, 0}));
  EXPECT_EQ(d.examples[0].target_features, std::vector<float>{72.5f});
  EXPECT_EQ(d.max_len, 8);
  EXPECT_EQ(ts_dataset(f, 2, "half").examples[1].tokens, (std::vector<int32_t>{128, 0, 128, 255}));  // block means 1,1 | 1,5
  // lower-case tags and a univariate file
  TsFile u = parse_ts("@problemname u\n@univariate true\n@targetlabel true\n@data\n1,2,3:4\n", "u.ts");
  EXPECT_EQ(u.dimensions, 1);
  EXPECT_EQ(u.series[0].dims[0].size(), 3u);
}

TEST(TsReader, LoadsTrainValTestFromAFolder) {
  TempDir dir("ts");
  std::string train = kHeader, test = kHeader;
  for (int i = 0; i < 21; ++i) train += "0,1,2," + std::to_string(i) + ":1,1,1,1:" + std::to_string(i) + "\n";
  test += "0,0,0,1:1,0,0,0:99\n";
  write_file(dir.file("BIDMC32HR/BIDMC32HR_TRAIN.ts"), train);
  write_file(dir.file("BIDMC32HR/BIDMC32HR_TEST.ts"), test);
  TaskData t = load_ts_regression(dir.str(), "BIDMC32HR", 0);
  ASSERT_EQ(t.train.examples.size(), 18u);  // the last seventh (3 of 21) is validation
  ASSERT_EQ(t.val.examples.size(), 3u);
  EXPECT_EQ(t.val.examples[0].target_features[0], 18);
  EXPECT_EQ(t.test.examples[0].target_features[0], 99);
  TaskConfig c;
  c.data_path = dir.str(), c.train_size = 5;
  EXPECT_EQ(bidmc_hr_task(c).train.examples.size(), 5u);
  std::string msg = data_error_message([&] { load_ts_regression(dir.str(), "BIDMC32RR", 0); });
  EXPECT_NE(msg.find("BIDMC32RR_TRAIN.ts"), std::string::npos) << msg;
}

TEST(TsReader, BadFilesNameFileLineAndWhatWasExpected) {
  struct Case {
    std::string content, expect;
  };
  const std::string h = kHeader;  // 9 header lines: the first series is line 10
  const std::vector<Case> cases = {
      {h + "0,1,2,3:3,2,1,0:72\n0,1,x,3:3,2,1,0:70\n", "bad.ts:11: dimension 1, value 3 'x' is not a number"},
      {h + "0,1,2,3:3,2,1,0:abc\n", "bad.ts:10: the target 'abc'"},
      {h + "0,1,2,3:72\n", "bad.ts:10: 1 dimension(s), expected 2 as declared"},
      {h + "0,1,2,3:3,2,1:72\n", "bad.ts:10: dimension 2 has 3 values, dimension 1 has 4"},
      {h + "0,1,2,3:3,2,1,0:72\n@data\n", "bad.ts:11: tag @data after @data"},
      {"@problemName x\n@targetLabel false\n@data\n", "bad.ts:2: @targetLabel false"},
      {"@problemName x\n@classLabel true a b\n@data\n", "bad.ts:2: @classLabel true: a classification file"},
      {"@problemName x\n@timeStamps true\n", "bad.ts:2: time-stamped series"},
      {"@problemName x\n@data\n1,2:3\n", "bad.ts:2: @data before '@targetLabel true'"},
      {"@problemName x\n1,2:3\n", "bad.ts:2: a series before @data"},
      {"@problemName x\n@targetLabel true\n", "bad.ts: no @data line"},
      {"@problemName x\n@targetLabel true\n@data\n", "bad.ts: no series after @data"},
      {"@problemName x\n@frobnicate 3\n", "bad.ts:2: unknown tag @frobnicate"},
      {"@univariate true\n@dimensions 2\n", "bad.ts:2: @dimensions 2 contradicts @univariate true"},
      {"@targetLabel true\n@data\n?,?:5\n", "bad.ts:3: dimension 1 has no values"},
      {"@targetLabel true\n@data\n1,1e300:5\n", "bad.ts:3: dimension 1, value 2 '1e300' is not a number in float range"},
  };
  for (const Case& c : cases) {
    std::string msg = data_error_message([&] { parse_ts(c.content, "bad.ts"); });
    EXPECT_NE(msg.find(c.expect), std::string::npos) << "expected '" << c.expect << "' in: " << msg;
  }
  EXPECT_NE(data_error_message([] { read_ts("/nonexistent/x.ts"); }).find("/nonexistent/x.ts"), std::string::npos);
}

// The speech task at a lower sampling rate (registry.cpp's resampled_speech, which uses block_average): seq_len
// samples per 1 s clip, the labels kept, and a clip's tokens those of its block-averaged decoded samples.
TEST(SpeechResampled, SeqLenLowersTheSamplingRate) {
  TaskConfig c;
  c.train_size = 3, c.val_size = 1, c.test_size = 1;
  TaskData full = make_task("speech", c);
  c.seq_len = 1000;
  TaskData low = make_task("speech", c);
  ASSERT_EQ(low.train.examples.size(), 3u);
  EXPECT_EQ(low.train.max_len, 1000);
  for (size_t i = 0; i < 3; ++i) {
    const Example &a = full.train.examples[i], &b = low.train.examples[i];
    ASSERT_EQ(b.tokens.size(), 1000u);
    EXPECT_EQ(a.label, b.label);
    double sum = 0;  // sample 500 of 1000: the mean of samples 8000..8015 of the full clip
    for (int k = 8000; k < 8016; ++k) sum += mu_law_decode(a.tokens[size_t(k)]);
    EXPECT_EQ(b.tokens[500], mu_law_encode(float(sum / 16)));
  }
}
