// apps/common/report.cpp - tables and plots (see report.h).
#include "apps/common/report.h"

#include <cstdlib>
#include <iomanip>
#include <sstream>

#include "apps/common/results.h"

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

static std::string header(const Plot& p, const std::string& png) {
  std::ostringstream g;
  g << "set terminal pngcairo size " << p.width << "," << p.height << " noenhanced\nset output " << quoted(png) << "\n"
    << "set title " << quoted(p.title) << "\nset xlabel " << quoted(p.xlabel) << "\nset ylabel " << quoted(p.ylabel) << "\n"
    << "set key " << p.key << "\nset grid\n";
  if (p.logx) g << "set logscale x\n";
  if (p.logy) g << "set logscale y\n";
  return g.str();
}

static void finish(const std::string& path, const std::string& dat, const std::string& gp) {
  write_text_atomic(path + ".dat", dat);
  write_text_atomic(path + ".gp", gp);
  if (have_gnuplot()) run_gnuplot(path + ".gp");
}

void plot_lines(const Plot& p, const std::string& path) {
  std::ostringstream d, plot;
  for (size_t i = 0; i < p.series.size(); i++) {
    const Series& s = p.series[i];
    d << "# " << s.title << "\n";
    for (size_t j = 0; j < s.x.size(); j++)
      d << s.x[j] << " " << s.y[j] << (s.err.empty() ? "" : " " + std::to_string(s.err[j])) << "\n";
    d << "\n\n";  // gnuplot data blocks are separated by two blank lines
    plot << (i ? ", \\\n     " : "plot ") << quoted(path + ".dat") << " index " << i
         << (s.err.empty() ? " using 1:2 with linespoints" : " using 1:2:3 with yerrorlines") << " title " << quoted(s.title);
  }
  if (p.series.empty()) return;
  finish(path, d.str(), header(p, path + ".png") + plot.str() + "\n");
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
  g << header(p, path + ".png") << "set style data histogram\nset style histogram errorbars gap 1 lw 1\n"
    << "set style fill solid 0.6 border -1\nset xtics rotate by -30\nset yrange [0:*]\n";
  for (size_t i = 0; i < p.series.size(); i++)
    g << (i ? ", \\\n     " : "plot ") << quoted(path + ".dat") << " using " << 2 + 2 * i << ":" << 3 + 2 * i
      << (i ? "" : ":xtic(1)") << " title " << quoted(p.series[i].title);
  g << "\n";
  finish(path, d.str(), g.str());
}

}  // namespace dl::harness
