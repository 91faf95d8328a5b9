// apps/common/report.h - the two writers every app reports through: tables (markdown + JSON) and gnuplot plots.
//
// Plots are written as <name>.dat (the numbers), <name>.gp (the script) and <name>.png beside them, so a reader
// can rerun or restyle them; with no gnuplot installed the .dat and .gp files are still written. gnuplot-nox
// may lack the cairo terminal: the script asks for pngcairo and falls back to png.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "apps/common/results.h"

namespace dl::harness {

using json = nlohmann::json;

struct Table {
  std::string title;
  std::vector<std::string> columns;
  std::vector<bool> right;  // per column: right-aligned (numbers); missing = left
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;  // paragraphs under the table

  std::string markdown() const;  // "# title", the table, the notes
  json to_json() const;          // {"title", "columns", "rows", "notes"}
};

// x with `digits` digits after the point (fixed notation): the number format of every table.
std::string fixed(double x, int digits);

bool have_gnuplot();
// Runs a gnuplot script whose terminal is pngcairo, falling back to png where gnuplot lacks cairo.
void run_gnuplot(const std::string& script);

struct Series {
  std::string title;
  std::vector<double> x, y, err;  // err empty: no error bars (a NaN y in bars: no bar)
  int color = 0;                  // gnuplot's linetype; 0: the series' position in its plot (1, 2, ...)
  bool in_key = true;             // false: drawn without a key entry (a second segment of a series already keyed)
};

struct Plot {
  std::string title, xlabel, ylabel;
  std::vector<Series> series;
  bool logx = false, logy = false;
  std::string key = "bottom right";  // gnuplot's "set key" position
  int width = 800, height = 500;
  bool bands = false;  // lines: err as a shaded band around the line (mean ± one standard error) instead of error bars
  std::vector<std::pair<double, std::string>> marks;  // lines: a dashed vertical line at x, labelled
  bool include_zero = false;  // bars: the y axis takes in 0 (a difference, whose sign is the point)
};

// Lines (with points where a series has 30 or fewer), one per series; error bars or bands where a series has err.
// `path` without extension.
void plot_lines(const Plot& p, const std::string& path);
// Plots of lines stacked top to bottom in one image under one title (each Plot's title heads its panel); the .dat
// holds every panel's series, each block headed "# <panel title>: <series title>". Panels without series are left out.
void plot_panels(const std::string& title, const std::vector<Plot>& panels, const std::string& path);
// Clustered bars: one cluster per category (the x labels), one bar per series in each; series[i].y[j] is
// series i on category j, with error bars from err. `path` without extension. The y axis fits the bars and their
// error bars (padded by a tenth of their span), so a difference of a point is visible; where it does not start at
// 0 the y label says so.
void plot_bars(const Plot& p, const std::vector<std::string>& categories, const std::string& path);

// ---- learning curves from the step-level log (metrics.csv; every app's plots/<task> draws them) ----
// A cell's log: its metrics.csv (a row every few steps of every phase), or where the run folder has none, the
// evaluations of its result.
std::vector<CurvePoint> cell_log(const std::string& out, const CellResult& r);
// The rows of one phase.
std::vector<CurvePoint> phase_rows(const std::vector<CurvePoint>& log, const std::string& phase);
// The log of the pretrained model a cell started from, where the app shares one pretraining between cells in a cache
// folder (fpt, pretrained_convs): the metrics.csv beside the file its result names (extra.pretrained.file); empty
// where the result names none or the cache no longer holds the log.
std::vector<CurvePoint> cached_pretraining_log(const CellResult& r);
// One value per seed at each x -> the mean, with a band of one standard error where more than one seed logged it.
Series over_seeds(const std::map<double, std::vector<double>>& at, const std::string& title, int color);

// One arm of a learning-curve plot (a model, a regime, ...): each seed's pretraining rows (empty: not pretrained)
// and training rows (the fine-tuning, or the only phase).
struct CurveArm {
  struct Seed {
    std::vector<CurvePoint> pretrain, train;
  };
  std::string title;
  std::vector<Seed> seeds;
};
struct CurveText {
  std::string title;  // the image's title
  std::string pretrain = "pretraining", pretrain_loss = "denoising loss";  // the x label and the boundary's label
  std::string train = "fine-tuning", train_loss = "classification loss";
};
// Training loss (top panel) and validation accuracy (bottom) of every arm against one step axis: pretraining first,
// training from the step where the longest pretraining ends (a dashed line), so every arm's training starts at the
// same x; a seed's pretraining is as long as its last row's step. Mean over seeds, band ± one standard error. Series
// titles: "<arm>" and "<arm> (pretraining)" (drawn in the arm's colour, without a key entry of its own).
void plot_learning_curves(const CurveText& text, const std::vector<CurveArm>& arms, const std::string& path);

}  // namespace dl::harness
