// apps/common/html_report.cpp - the run's report.html (see html_report.h).
#include "apps/common/html_report.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "apps/common/config.h"  // join

namespace dl::harness {

namespace fs = std::filesystem;

std::string base64(const std::string& bytes) {
  static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {  // 3 bytes -> 4 digits of 6 bits; '=' pads a short last group
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t v = 0;
    for (size_t k = 0; k < 3; k++) v = v << 8 | (k < n ? (unsigned char)bytes[i + k] : 0);
    for (size_t k = 0; k < 4; k++) out += k <= n ? digits[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  return out;
}

std::string machine_description() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, model, family, number;
  int cpus = 0;
  auto value = [&]() { return line.substr(line.find(':') + 2); };
  while (std::getline(f, line)) {
    if (line.rfind("processor", 0) == 0) cpus++;
    if (model.empty() && line.rfind("model name", 0) == 0) model = value();
    if (family.empty() && line.rfind("cpu family", 0) == 0) family = value();
    if (number.empty() && line.rfind("model\t", 0) == 0) number = value();
  }
  if (cpus == 0) return "unknown CPU (/proc/cpuinfo unreadable)";
  // the family tells processor generations apart where the model name does not ("AMD EPYC": 25 Zen 4, 26 Zen 5)
  std::string d = model.empty() ? std::string("unknown CPU") : model;
  if (!family.empty()) d += " (family " + family + (number.empty() ? "" : ", model " + number) + ")";
  return d + ", " + std::to_string(cpus) + " logical CPU" + (cpus > 1 ? "s" : "");
}

std::string source_commit() {
  const std::string cmd = std::string("git -C '") + DL_SOURCE_DIR + "' describe --always --dirty 2>/dev/null";
  std::string text;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (fgets(buf, sizeof buf, p)) text += buf;
    if (pclose(p) != 0) text.clear();
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.empty() ? "unknown (" + std::string(DL_SOURCE_DIR) + " is not a git checkout)" : text;
}

// ---- one cell's curve as SVG ----
namespace {

// A number for an SVG attribute or label: a few significant digits.
std::string num(double x) {
  std::ostringstream os;
  os << std::setprecision(4) << x;
  return os.str();
}

// Maps data to pixels inside the frame [left, right] x [top, bottom].
struct Frame {
  double left, right, top, bottom, x0, x1, y0, y1;
  double px(double x) const { return left + (x - x0) / (x1 - x0) * (right - left); }
  double py(double y) const { return bottom - (y - y0) / (y1 - y0) * (bottom - top); }
};

std::string text_at(double x, double y, const std::string& anchor, const std::string& s, const std::string& color = "#333") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" + anchor + "\" fill=\"" + color + "\">" +
         html_escape(s) + "</text>\n";
}

std::string polyline(const std::vector<std::pair<double, double>>& pts, const std::string& color) {
  std::string s = "<polyline fill=\"none\" stroke=\"" + color + "\" stroke-width=\"1.5\" points=\"";
  for (auto& [x, y] : pts) s += num(x) + "," + num(y) + " ";
  return s + "\"/>\n";
}

}  // namespace

std::string curve_svg(const std::vector<CurvePoint>& rows, int width, int height) {
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  // phases in the order they were logged; each continues the step axis where the previous one ended
  std::vector<std::pair<std::string, int>> phases;  // name, offset
  std::map<std::string, int> last;
  for (auto& r : rows) {
    if (!last.count(r.phase)) phases.push_back({r.phase, 0});
    last[r.phase] = std::max(last[r.phase], r.step);
  }
  std::map<std::string, int> offset;
  int total = 0;
  for (auto& [name, off] : phases) off = offset[name] = total, total += last[name];
  double lo = INFINITY, hi = -INFINITY;
  bool any_acc = false;
  for (auto& r : rows) {
    if (std::isfinite(r.train_loss)) lo = std::min(lo, r.train_loss), hi = std::max(hi, r.train_loss);
    any_acc |= r.accuracy >= 0;
  }
  if (rows.empty() || !std::isfinite(lo) || total == 0) {
    svg << text_at(width / 2.0, height / 2.0, "middle", "no log (metrics.csv is missing or empty)") << "</svg>\n";
    return svg.str();
  }
  if (hi - lo < 1e-12) lo -= 0.5, hi += 0.5;
  const Frame loss{55, width - 55.0, 22, height - 32.0, 0, (double)total, lo, hi};
  const Frame acc{loss.left, loss.right, loss.top, loss.bottom, 0, (double)total, 0, 100};
  svg << "<rect x=\"" << loss.left << "\" y=\"" << loss.top << "\" width=\"" << loss.right - loss.left << "\" height=\""
      << loss.bottom - loss.top << "\" fill=\"none\" stroke=\"#999\"/>\n";
  for (auto& [name, off] : phases) {  // boundaries and phase names
    const double x = loss.px(off);
    if (off > 0)
      svg << "<line x1=\"" << num(x) << "\" y1=\"" << loss.top << "\" x2=\"" << num(x) << "\" y2=\"" << loss.bottom
          << "\" stroke=\"#666\" stroke-dasharray=\"4 3\"/>\n";
    svg << text_at(x + 4, loss.top + 12, "start", name, "#666");
  }
  std::vector<std::pair<double, double>> lpts, apts;
  for (auto& r : rows) {
    const double x = offset[r.phase] + r.step;
    if (std::isfinite(r.train_loss)) lpts.push_back({loss.px(x), loss.py(r.train_loss)});
    if (r.accuracy >= 0) apts.push_back({acc.px(x), acc.py(100 * r.accuracy)});
  }
  svg << polyline(lpts, "#1f77b4");
  if (apts.size() > 1) svg << polyline(apts, "#d62728");
  for (auto& [x, y] : apts) svg << "<circle cx=\"" << num(x) << "\" cy=\"" << num(y) << "\" r=\"2.5\" fill=\"#d62728\"/>\n";
  svg << text_at(loss.left - 4, loss.top + 4, "end", num(hi)) << text_at(loss.left - 4, loss.bottom, "end", num(lo))
      << text_at(loss.left, loss.bottom + 14, "middle", "0")
      << text_at(loss.right, loss.bottom + 14, "middle", std::to_string(total))
      << text_at((loss.left + loss.right) / 2, loss.bottom + 26, "middle", "step (phases one after another)")
      << text_at(loss.left, 14, "start", "training loss (mean since the previous row)", "#1f77b4");
  if (any_acc)
    svg << text_at(loss.right + 4, loss.top + 4, "start", "100%", "#d62728")
        << text_at(loss.right + 4, loss.bottom, "start", "0%", "#d62728")
        << text_at(loss.right, 14, "end", "validation accuracy (right axis)", "#d62728");
  svg << "</svg>\n";
  return svg.str();
}

// ---- the page ----
namespace {

const char* kStyle = R"(body { font-family: sans-serif; max-width: 1200px; margin: 1em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; } h3 { margin-bottom: 0.3em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; } th { background: #f2f2f2; } td.num { text-align: right; }
dl.about { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; } dl.about dt { font-weight: bold; }
figure { margin: 1em 0; } img { max-width: 100%; border: 1px solid #eee; } figcaption { color: #555; font-size: 0.9em; }
p.note { color: #333; font-size: 0.9em; } pre { background: #f7f7f7; padding: 0.5em; overflow-x: auto; font-size: 0.85em; }
section.cell { border-top: 1px dashed #ccc; margin-top: 1em; }
)";

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
  return buf;
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string img(const std::string& mime, const std::string& bytes, const std::string& alt, const std::string& attrs) {
  return "<img src=\"data:" + mime + ";base64," + base64(bytes) + "\" alt=\"" + html_escape(alt) + "\" " + attrs + ">";
}

// The "what ran" list at the top.
std::string about(const std::string& out, const std::string& app, const std::string& preset, const std::vector<CellResult>& rs) {
  double wall = 0;
  for (auto& r : rs) wall += r.wall_s;
  std::ostringstream h;
  auto item = [&](const std::string& k, const std::string& v) {
    h << "<dt>" << html_escape(k) << "</dt><dd>" << html_escape(v) << "</dd>\n";
  };
  h << "<dl class=\"about\">\n";
  item("app, preset", app + ", preset " + preset);
  item("written", now_utc());
  item("machine",
       machine_description() + "; " + std::to_string(omp_get_max_threads()) + " OpenMP thread(s) in the writing process");
  std::set<std::string> ran;  // the commits the cells ran at (the harness records it in each result)
  for (auto& r : rs)
    if (r.extra.contains("commit") && r.extra["commit"].is_string()) ran.insert(r.extra["commit"].get<std::string>());
  item("commit",
       (ran.empty() ? std::string("the cells did not record theirs") : "cells ran at " + join({ran.begin(), ran.end()})) +
           "; this page written at " + source_commit() + " (git describe --always --dirty of the source tree)");
  item("cells finished", std::to_string(rs.size()));
  item("wall time", fixed(wall, 1) + " s, summed over the cells (cells run side by side with --jobs overlap)");
  item("run folder", fs::absolute(out).lexically_normal().string());
  h << "</dl>\n";
  return h.str();
}

std::string results_table(const Table& t) {
  std::ostringstream h;
  h << "<h2>Results</h2>\n<p><b>" << html_escape(t.title) << "</b></p>\n<table id=\"results\">\n<thead><tr>";
  for (auto& c : t.columns) h << "<th>" << html_escape(c) << "</th>";
  h << "</tr></thead>\n<tbody>\n";
  for (auto& row : t.rows) {
    h << "<tr>";
    for (size_t i = 0; i < row.size(); i++)
      h << (i < t.right.size() && t.right[i] ? "<td class=\"num\">" : "<td>") << html_escape(row[i]) << "</td>";
    h << "</tr>\n";
  }
  h << "</tbody>\n</table>\n";
  for (auto& n : t.notes) h << "<p class=\"note\">" << html_escape(n) << "</p>\n";
  return h.str();
}

// Every *.png and *.svg in <out>/plots, by name.
std::string plots(const std::string& out) {
  std::vector<fs::path> files;
  if (fs::is_directory(out + "/plots"))
    for (auto& e : fs::directory_iterator(out + "/plots"))
      if (e.path().extension() == ".png" || e.path().extension() == ".svg") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::ostringstream h;
  h << "<h2>Plots</h2>\n";
  if (files.empty()) h << "<p>No plots in " << html_escape(out) << "/plots (gnuplot draws them where it is installed).</p>\n";
  for (auto& f : files) {
    const std::string name = "plots/" + f.filename().string();
    const std::string mime = f.extension() == ".png" ? "image/png" : "image/svg+xml";
    h << "<figure>" << img(mime, read_bytes(f.string()), name, "class=\"plot\" data-file=\"" + html_escape(name) + "\"")
      << "<figcaption>" << html_escape(name) << "</figcaption></figure>\n";
  }
  return h.str();
}

// The cells' numbers in one table: metrics exactly as results.json writes them (JSON's shortest round-trip form).
std::string cells_table(const std::vector<CellResult>& rs) {
  std::set<std::string> names;
  for (auto& r : rs)
    for (auto& [k, v] : r.metrics) names.insert(k);
  std::ostringstream h;
  h << "<table id=\"cells\">\n<thead><tr><th>cell</th><th>seed</th><th>params</th><th>wall s</th><th>steps/s</th>";
  for (auto& n : names) h << "<th>" << html_escape(n) << "</th>";
  h << "</tr></thead>\n<tbody>\n";
  for (auto& r : rs) {
    h << "<tr data-cell=\"" << html_escape(r.cell.name()) << "\"><td><a href=\"#cell-" << html_escape(r.cell.name()) << "\">"
      << html_escape(r.cell.key()) << "</a></td><td class=\"num\">" << r.cell.seed << "</td><td class=\"num\">" << r.params
      << "</td><td class=\"num\">" << fixed(r.wall_s, 1) << "</td><td class=\"num\">" << fixed(r.steps_per_s, 2) << "</td>";
    for (auto& n : names) {
      auto it = r.metrics.find(n);
      if (it == r.metrics.end()) {  // a metric other cells have (e.g. pretraining's loss)
        h << "<td class=\"num\">-</td>";
        continue;
      }
      const std::string v = std::isfinite(it->second) ? json(it->second).dump() : "null";  // results.json's NaN
      h << "<td class=\"num\" data-metric=\"" << html_escape(n) << "\">" << html_escape(v) << "</td>";
    }
    h << "</tr>\n";
  }
  h << "</tbody>\n</table>\n";
  return h.str();
}

// One cell: its curve, its config and its log rows (folded).
std::string cell_section(const std::string& out, const CellResult& r) {
  std::vector<CurvePoint> rows = read_metrics_csv(cell_dir(out, r.cell) + "/metrics.csv");
  const bool from_csv = !rows.empty();
  if (!from_csv) rows = r.curve;  // a run folder copied without its cells' logs: the evaluations
  std::ostringstream h;
  h << "<section class=\"cell\" id=\"cell-" << html_escape(r.cell.name()) << "\">\n<h3>" << html_escape(r.cell.label())
    << "</h3>\n<figure>" << img("image/svg+xml", curve_svg(rows), "curve of " + r.cell.name(), "class=\"curve\"")
    << "<figcaption>" << (from_csv ? "cells/" + html_escape(r.cell.name()) + "/metrics.csv" : "the evaluations in results.json")
    << ": " << rows.size() << " rows</figcaption></figure>\n";
  h << "<details><summary>config</summary><pre>" << html_escape(r.cell.config.dump(2)) << "</pre></details>\n";
  h << "<details><summary>log rows</summary><table><thead><tr><th>phase</th><th>step</th><th>train loss</th><th>val loss</th>"
       "<th>accuracy</th><th>lr</th></tr></thead><tbody>\n";
  for (auto& p : rows)
    h << "<tr><td>" << html_escape(p.phase) << "</td><td class=\"num\">" << p.step << "</td><td class=\"num\">"
      << num(p.train_loss) << "</td><td class=\"num\">" << (std::isfinite(p.val_loss) ? num(p.val_loss) : "")
      << "</td><td class=\"num\">" << (p.accuracy >= 0 ? num(p.accuracy) : "") << "</td><td class=\"num\">" << num(p.lr)
      << "</td></tr>\n";
  h << "</tbody></table></details>\n</section>\n";
  return h.str();
}

}  // namespace

std::string html_report(const std::string& out, const std::string& app, const std::string& preset, const Table& t,
                        const std::vector<CellResult>& rs) {
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" << html_escape(app + " " + preset)
    << "</title>\n<style>\n"
    << kStyle << "</style>\n</head>\n<body>\n<h1>" << html_escape(app) << ": preset " << html_escape(preset) << "</h1>\n"
    << about(out, app, preset, rs) << results_table(t) << plots(out) << "<h2>Cells</h2>\n"
    << cells_table(rs);
  for (auto& r : rs) h << cell_section(out, r);
  h << "</body>\n</html>\n";
  return h.str();
}

void write_html_report(const std::string& out, const std::string& app, const std::string& preset, const Table& t,
                       const std::vector<CellResult>& rs) {
  write_text_atomic(out + "/report.html", html_report(out, app, preset, t, rs));
}

}  // namespace dl::harness
