// tasks/regression.h - sequence regression: a scalar target per series (the BIDMC vital-sign tasks of S4 and
// "Never Train from Scratch": heart rate, respiratory rate, SpO2 from 32 s of PPG/ECG at 125 Hz = 4000 steps).
//
// What it is.
//  - A generated STAND-IN for BIDMC (no patient data ships here): one PPG-like channel per series, a quasi-periodic
//    pulse train whose beat rate is the heart rate HR (with respiratory sinus arrhythmia: the beat rate wobbles at
//    the respiratory rate RR), respiratory amplitude modulation and baseline wander at RR, a slow drift and Gaussian
//    noise. Each series is labelled with its HR (bpm) or RR (breaths/min). The pulse shape (systolic peak plus a
//    dicrotic wave), the modulation depths, drift and noise are drawn per series, so the rate is the thing to
//    find, not the waveform. Deterministic from the seed; train/val/test come from separate streams (seed, seed+1,
//    seed+2) and example i of a split can be regenerated alone.
//  - A reader of the Monash/UEA time-series extrinsic regression archive's `.ts` files (Tan et al. 2021; sktime's
//    format with @targetLabel), which is how BIDMC32HR/RR/SpO2 are distributed (BIDMC32HR_TRAIN.ts, ..._TEST.ts):
//      # comment lines            @problemName <name>     @timeStamps false     @univariate true|false
//      @dimension(s) <n>          @equalLength ...        @seriesLength <n>     @missing ...
//      @targetLabel true          @data
//      v,v,v,...:v,v,v,...:<target>      one series per line: each dimension's comma-separated values, dimensions
//                                        separated by ':', the target last ('?' marks a missing value)
//    Tags are case-insensitive. Time-stamped series ("(t,v)" tuples) and classification files (@classLabel) are
//    refused by name. A bad file is a DataError naming the file, the line and what was expected there.
//
// How a series becomes tokens (the app feeds pixels and audio as tokens, so this does too): each dimension of each
// series is scaled by its own min..max to 256 levels (token = round(255 (x - min) / (max - min)); a flat
// dimension is all 128). A multivariate series interleaves its dimensions per time step (x0[0], x1[0], x0[1], ...),
// so BIDMC's PPG + ECG at 4000 steps is 8000 tokens. With `seq_len` below the series length each dimension is first
// block-averaged to seq_len steps (a shorter window does not fit a CPU run; the rates stay in it while the
// sampling rate, seq_len / 32 s, is above twice the heart rate). The stand-in is generated at seq_len directly.
// The target stays in its own units in Example::target_features[0] (label -1, num_classes 0); the app standardises
// it with the training split's mean and spread and reports errors in the target's units.
//
// What it is not: a physiological model (the stand-in has no ECG, no arrhythmia, no motion artefacts; numbers on it
// say nothing about BIDMC) and not a feature extractor.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "tasks/dataset.h"
#include "tasks/registry.h"

namespace dl::tasks {

inline constexpr int32_t kRegressionLevels = 256;  // token vocabulary of a quantised series

// ---- the generated stand-in ----------------------------------------------------------------

enum class PulseTarget { heart_rate, respiratory_rate };

struct PulseConfig {
  int32_t length = 4000;     // samples per series (BIDMC: 4000 = 32 s at 125 Hz)
  double duration_s = 32.0;  // the window; the sampling rate is length / duration_s
  double min_hr = 50, max_hr = 130;  // beats per minute, uniform
  double min_rr = 8, max_rr = 30;    // breaths per minute, uniform
  double max_rsa = 0.06;             // respiratory sinus arrhythmia: relative beat-rate swing, U(0, max)
  double min_am = 0.1, max_am = 0.4;      // respiratory amplitude modulation depth
  double min_wander = 0.1, max_wander = 0.6;  // baseline wander at RR (pulse amplitude 1)
  double max_drift = 0.5;                     // linear drift over the window, U(-max, max)
  double min_noise = 0.02, max_noise = 0.15;  // Gaussian noise std, log-uniform
  PulseTarget target = PulseTarget::heart_rate;
};

struct PulseSeries {
  std::vector<float> signal;  // length samples
  double heart_rate = 0, respiratory_rate = 0;
};

// One series with its rates drawn from rng.
PulseSeries make_pulse_series(const PulseConfig& config, std::mt19937_64& rng);
// `num_examples` quantised series labelled with config.target (target_features = {rate}).
Dataset make_pulse_dataset(const PulseConfig& config, int64_t num_examples, uint64_t seed, const std::string& name);

// ---- series -> tokens ------------------------------------------------------------------------

// x block-averaged to out_len samples (sample j is the mean of x[j n / out_len, (j + 1) n / out_len)); x itself when
// out_len <= 0 or out_len >= x.size().
std::vector<float> block_average(const std::vector<float>& x, int32_t out_len);
// 256 levels over the series' own min..max (see the header); a constant series is all 128.
std::vector<int32_t> quantise_series(const std::vector<float>& x);

// ---- the .ts format --------------------------------------------------------------------------

struct TsSeries {
  std::vector<std::vector<float>> dims;  // one vector per dimension, all of one length
  double target = 0;
  int64_t line = 0;  // where it was in the file, for messages
};

struct TsFile {
  std::string problem;  // @problemName
  int32_t dimensions = 0;
  std::vector<TsSeries> series;
};

// Parses a whole .ts file held in memory; `name` labels messages ("name:line: ...").
TsFile parse_ts(std::string_view content, const std::string& name);
TsFile read_ts(const std::string& path);

// The series of a file as a regression Dataset (tokens as described above, target_features = {target}).
Dataset ts_dataset(const TsFile& file, int32_t seq_len, const std::string& name);

// <dir>/<problem>_TRAIN.ts and <problem>_TEST.ts (or the same under <dir>/<problem>/): train, validation = the last
// seventh of the TRAIN file (the split S4's BIDMC preparation calls "original"), test = the TEST file.
TaskData load_ts_regression(const std::string& dir, const std::string& problem, int32_t seq_len);

// The registry's makers (registry.cpp): the stand-in, or with data_path BIDMC32HR / BIDMC32RR / BIDMC32SpO2 files.
// bidmc_spo2 has no stand-in and needs data_path.
TaskData bidmc_hr_task(const TaskConfig& c);
TaskData bidmc_rr_task(const TaskConfig& c);
TaskData bidmc_spo2_task(const TaskConfig& c);

}  // namespace dl::tasks
