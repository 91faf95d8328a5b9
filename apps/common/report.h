// apps/common/report.h - the two writers every app reports through: tables (markdown + JSON) and gnuplot plots.
//
// Plots are written as <name>.dat (the numbers), <name>.gp (the script) and <name>.png beside them, so a reader
// can rerun or restyle them; with no gnuplot installed the .dat and .gp files are still written. gnuplot-nox
// may lack the cairo terminal: the script asks for pngcairo and falls back to png.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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
  std::vector<double> x, y, err;  // err empty: no error bars
};

struct Plot {
  std::string title, xlabel, ylabel;
  std::vector<Series> series;
  bool logx = false, logy = false;
  std::string key = "bottom right";  // gnuplot's "set key" position
  int width = 800, height = 500;
};

// Lines with points, one per series (error bars where a series has them). `path` without extension.
void plot_lines(const Plot& p, const std::string& path);
// Clustered bars: one cluster per category (the x labels), one bar per series in each; series[i].y[j] is
// series i on category j, with error bars from err. `path` without extension.
void plot_bars(const Plot& p, const std::vector<std::string>& categories, const std::string& path);

}  // namespace dl::harness
