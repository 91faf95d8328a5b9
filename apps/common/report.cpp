// apps/common/report.cpp - tables and plots (see report.h).
#include "apps/common/report.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "apps/common/results.h"
#include "apps/common/stats.h"

namespace dl::harness {

std::string fixed(double x, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << x;
  return os.str();
}

std::string Table::markdown() const {
  std::ostringstream os;
  if (!title.empty()) os << "# " << title << "\n\n";
  auto row = [&](const std::vector<std::string>& cells) {
    os << "|";
    for (auto& c : cells) os << " " << c << " |";
    os << "\n";
  };
  row(columns);
  os << "|";
  for (size_t i = 0; i < columns.size(); i++) os << (i < right.size() && right[i] ? " ---: |" : " --- |");
  os << "\n";
  for (auto& r : rows) row(r);
  for (auto& n : notes) os << "\n" << n << "\n";
  return os.str();
}

json Table::to_json() const { return {{"title", title}, {"columns", columns}, {"rows", rows}, {"notes", notes}}; }

bool have_gnuplot() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

void run_gnuplot(const std::string& script) {
  std::string cmd = "gnuplot '" + script + "' 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) {  // pngcairo may be missing in gnuplot-nox: fall back to png
    std::string alt = "sed -i 's/pngcairo/png/' '" + script + "' && gnuplot '" + script + "' 2>/dev/null";
    (void)std::system(alt.c_str());
  }
}

// gnuplot single-quoted strings: a quote is written twice
static std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

static std::string terminal(int width, int height, const std::string& png) {
  return "set terminal pngcairo size " + std::to_string(width) + "," + std::to_string(height) + " noenhanced\nset output " +
         quoted(png) + "\nset datafile missing 'nan'\n";
}

// One plot's (or panel's) settings.
static std::string settings(const Plot& p) {
  std::ostringstream g;
  g << "set title " << quoted(p.title) << "\nset xlabel " << quoted(p.xlabel) << "\nset ylabel " << quoted(p.ylabel) << "\n"
    << "set key " << p.key << "\nset grid\n";
  if (p.logx) g << "set logscale x\n";
  if (p.logy) g << "set logscale y\n";
  for (auto& [x, label] : p.marks)
    g << "set arrow from " << x << ", graph 0 to " << x << ", graph 1 nohead dashtype 2 lc rgb 'gray30'\n"
      << "set label " << quoted(label) << " at " << x << ", graph 0.05 center front tc rgb 'gray30'\n";
  return g.str();
}

static std::string header(const Plot& p, const std::string& png) { return terminal(p.width, p.height, png) + settings(p); }

static void finish(const std::string& path, const std::string& dat, const std::string& gp) {
  write_text_atomic(path + ".dat", dat);
  write_text_atomic(path + ".gp", gp);
  if (have_gnuplot()) run_gnuplot(path + ".gp");
}

// The series of one plot as data blocks (numbered from `block`, headed "# <prefix><title>") and its plot command.
static std::string line_series(const Plot& p, const std::string& dat, const std::string& prefix, std::ostringstream& d,
                               int& block) {
  std::ostringstream plot;
  for (size_t i = 0; i < p.series.size(); i++) {
    const Series& s = p.series[i];
    d << "# " << prefix << s.title << "\n";
    for (size_t j = 0; j < s.x.size(); j++)
      d << s.x[j] << " " << s.y[j] << (s.err.empty() ? "" : " " + std::to_string(s.err[j])) << "\n";
    d << "\n\n";  // gnuplot data blocks are separated by two blank lines
    const std::string src = quoted(dat) + " index " + std::to_string(block++);
    const std::string lc = " lt " + std::to_string(s.color > 0 ? s.color : (int)i + 1);
    const std::string title = s.in_key ? " title " + quoted(s.title) : " notitle";
    const std::string points = s.x.size() <= 30 ? "linespoints pt 7 ps 0.7" : "lines";
    plot << (plot.tellp() > 0 ? ", \\\n     " : "plot ");
    if (s.err.empty()) plot << src << " using 1:2 with " << points << lc << " lw 2" << title;
    else if (p.bands)
      plot << src << " using 1:($2-$3):($2+$3) with filledcurves fs transparent solid 0.2 noborder" << lc << " notitle, \\\n     "
           << src << " using 1:2 with " << points << lc << " lw 2" << title;
    else plot << src << " using 1:2:3 with yerrorlines" << lc << title;
  }
  return plot.str();
}

void plot_lines(const Plot& p, const std::string& path) {
  if (p.series.empty()) return;
  std::ostringstream d;
  int block = 0;
  const std::string plot = line_series(p, path + ".dat", "", d, block);
  finish(path, d.str(), header(p, path + ".png") + plot + "\n");
}

void plot_panels(const std::string& title, const std::vector<Plot>& panels, const std::string& path) {
  std::vector<const Plot*> shown;
  for (auto& p : panels)
    if (!p.series.empty()) shown.push_back(&p);
  if (shown.empty()) return;
  std::ostringstream d, g;
  int block = 0, height = 60;
  double lo = INFINITY, hi = -INFINITY;  // one x range for all panels, so their steps line up
  for (auto* p : shown) {
    height += p->height;
    for (auto& s : p->series)
      for (double x : s.x) lo = std::min(lo, x), hi = std::max(hi, x);
  }
  g << terminal(shown.front()->width, height, path + ".png") << "set multiplot layout " << shown.size() << ",1 title "
    << quoted(title) << "\n";
  if (lo < hi) g << "set xrange [" << std::min(lo, 0.0) << ":" << hi << "]\nset lmargin 10\n";  // aligned panels
  for (auto* p : shown)
    g << settings(*p) << line_series(*p, path + ".dat", p->title + ": ", d, block)
      << "\nunset arrow\nunset label\nunset logscale\n";
  g << "unset multiplot\n";
  finish(path, d.str(), g.str());
}

// The y range of bars: their values and error bars, padded by a tenth of the span; 0 only where it is near (the
// padding reaches it) or asked for.
static std::pair<double, double> bar_range(const Plot& p) {
  double lo = INFINITY, hi = -INFINITY;
  for (auto& s : p.series)
    for (size_t j = 0; j < s.y.size(); j++) {
      const double e = j < s.err.size() && std::isfinite(s.err[j]) ? std::abs(s.err[j]) : 0;
      if (std::isfinite(s.y[j])) lo = std::min(lo, s.y[j] - e), hi = std::max(hi, s.y[j] + e);
    }
  if (!std::isfinite(lo)) return {0, 1};
  if (p.include_zero) lo = std::min(lo, 0.0), hi = std::max(hi, 0.0);
  const double pad = hi > lo ? 0.1 * (hi - lo) : std::max(1.0, 0.1 * std::abs(hi));
  double a = lo - pad, b = hi + pad;
  if (lo >= 0 && a < 0) a = 0;  // no negative axis under positive bars
  return {a, b};
}

void plot_bars(const Plot& p, const std::vector<std::string>& categories, const std::string& path) {
  if (p.series.empty() || categories.empty()) return;
  std::ostringstream d, g;
  d << "# category";
  for (auto& s : p.series) d << " | " << s.title << " (value, error)";
  d << "\n";
  for (size_t j = 0; j < categories.size(); j++) {
    d << '"' << categories[j] << '"';  // a data file's string column is double-quoted
    for (auto& s : p.series) d << " " << s.y.at(j) << " " << (s.err.empty() ? 0.0 : s.err.at(j));
    d << "\n";
  }
  const auto [lo, hi] = bar_range(p);
  Plot q = p;
  if (lo > 0) q.ylabel += " (axis does not start at 0)";
  g << header(q, path + ".png") << "set style data histogram\nset style histogram errorbars gap 1 lw 1\n"
    << "set style fill solid 0.6 border -1\nset xtics rotate by -30\nset yrange [" << lo << ":" << hi << "]\n"
    << (lo < 0 ? "set xzeroaxis lt -1 lw 1.5\n" : "");
  for (size_t i = 0; i < p.series.size(); i++)
    g << (i ? ", \\\n     " : "plot ") << quoted(path + ".dat") << " using " << 2 + 2 * i << ":" << 3 + 2 * i
      << (i ? "" : ":xtic(1)") << " lt " << (p.series[i].color > 0 ? p.series[i].color : (int)i + 1) << " title "
      << quoted(p.series[i].title);
  g << "\n";
  finish(path, d.str(), g.str());
}

// ---- learning curves ----

std::vector<CurvePoint> cell_log(const std::string& out, const CellResult& r) {
  std::vector<CurvePoint> rows = read_metrics_csv(cell_dir(out, r.cell) + "/metrics.csv");
  return rows.empty() ? r.curve : rows;
}

std::vector<CurvePoint> phase_rows(const std::vector<CurvePoint>& log, const std::string& phase) {
  std::vector<CurvePoint> rows;
  for (auto& p : log)
    if (p.phase == phase) rows.push_back(p);
  return rows;
}

std::vector<CurvePoint> cached_pretraining_log(const CellResult& r) {
  const json pre = r.extra.value("pretrained", json::object());
  if (!pre.is_object() || !pre.contains("file") || !pre["file"].is_string()) return {};
  return read_metrics_csv(std::filesystem::path(pre["file"].get<std::string>()).parent_path().string() + "/metrics.csv");
}

Series over_seeds(const std::map<double, std::vector<double>>& at, const std::string& title, int color) {
  Series s;
  s.title = title, s.color = color;
  bool band = false;
  for (auto& [x, v] : at) band |= v.size() > 1;
  for (auto& [x, v] : at) {
    MeanSE m = mean_se(v);
    s.x.push_back(x), s.y.push_back(m.mean);
    if (band) s.err.push_back(v.size() > 1 ? m.se : 0);
  }
  return s;
}

static int last_step(const std::vector<CurvePoint>& rows) {
  int s = 0;
  for (auto& p : rows) s = std::max(s, p.step);
  return s;
}

void plot_learning_curves(const CurveText& text, const std::vector<CurveArm>& arms, const std::string& path) {
  int boundary = 0;  // the training's step 0 on the axis
  for (auto& a : arms)
    for (auto& s : a.seeds) boundary = std::max(boundary, last_step(s.pretrain));
  Plot loss, acc;
  loss.title = "training loss", loss.ylabel = "mean over the steps since the previous point";
  acc.title = "validation accuracy", acc.ylabel = "accuracy (%)";
  loss.key = "top right", acc.key = boundary > 0 ? "top left" : "bottom right";  // where the lines are not
  for (Plot* p : {&loss, &acc}) {
    p->xlabel = boundary > 0 ? "step (" + text.pretrain + ": " + text.pretrain_loss + "; " + text.train + " from step " +
                                   std::to_string(boundary) + ": " + text.train_loss + ")"
                             : text.train + " step";
    p->bands = true, p->height = 360;
    if (boundary > 0) p->marks = {{(double)boundary, text.pretrain + " | " + text.train}};
  }
  for (size_t i = 0; i < arms.size(); i++) {
    std::map<double, std::vector<double>> pre, train, val;
    for (auto& s : arms[i].seeds) {
      const int start = boundary - last_step(s.pretrain);  // a shorter pretraining ends at the boundary too
      for (auto& p : s.pretrain)
        if (std::isfinite(p.train_loss)) pre[start + p.step].push_back(p.train_loss);
      for (auto& p : s.train) {
        if (std::isfinite(p.train_loss)) train[boundary + p.step].push_back(p.train_loss);
        if (p.accuracy >= 0) val[boundary + p.step].push_back(100 * p.accuracy);
      }
    }
    const int color = (int)i + 1;
    if (!pre.empty()) {
      loss.series.push_back(over_seeds(pre, arms[i].title + " (pretraining)", color));
      loss.series.back().in_key = false;  // the training segment carries the key entry
    }
    loss.series.push_back(over_seeds(train, arms[i].title, color));
    if (!val.empty()) acc.series.push_back(over_seeds(val, arms[i].title, color));
  }
  plot_panels(text.title, {loss, acc}, path);
}

}  // namespace dl::harness
