// apps/lra_benchmark/report.cpp - see report.h.
#include "report.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "tensor/safetensors.h"

namespace lra {

namespace fs = std::filesystem;

json CellResult::to_json() const {
  json c = json::array();
  for (auto& p : curve) c.push_back({{"phase", p.phase}, {"step", p.step}, {"loss", p.loss}, {"accuracy", p.accuracy}, {"lr", p.lr}});
  return {{"task", task}, {"model", model}, {"regime", regime}, {"val_acc", val_acc}, {"test_acc", test_acc},
          {"best_val_acc", best_val_acc}, {"pretrain_final_loss", pretrain_final_loss}, {"params", params},
          {"wall_s", wall_s}, {"steps_per_s", steps_per_s}, {"steps", steps}, {"pretrain_steps", pretrain_steps},
          {"curve", c}, {"config", config}};
}

CellResult CellResult::from_json(const json& j) {
  CellResult r;
  r.task = j.at("task"), r.model = j.at("model"), r.regime = j.at("regime");
  r.val_acc = j.at("val_acc"), r.test_acc = j.at("test_acc"), r.best_val_acc = j.value("best_val_acc", r.val_acc);
  r.pretrain_final_loss = j.value("pretrain_final_loss", -1.0);
  r.params = j.at("params"), r.wall_s = j.at("wall_s"), r.steps_per_s = j.at("steps_per_s");
  r.steps = j.value("steps", 0), r.pretrain_steps = j.value("pretrain_steps", 0);
  for (auto& p : j.value("curve", json::array()))
    r.curve.push_back({p.at("phase"), p.at("step"), p.at("loss"), p.at("accuracy"), p.value("lr", 0.0)});
  r.config = j.value("config", json::object());
  return r;
}

Progress::Progress(std::string label, int total, int start, bool quiet)
    : label_(std::move(label)), total_(total), start_(start), tty_(isatty(2)), quiet_(quiet), t0_(std::chrono::steady_clock::now()), last_print_(t0_) {}

void Progress::update(int step, double loss, double acc) {
  if (quiet_) return;
  auto now = std::chrono::steady_clock::now();
  double since = std::chrono::duration<double>(now - last_print_).count();
  bool last = step >= total_;
  if (!last && since < (tty_ ? 0.2 : 10.0)) return;
  last_print_ = now;
  double el = std::chrono::duration<double>(now - t0_).count();
  double rate = el > 0 ? (step - start_) / el : 0;
  double eta = rate > 0 ? (total_ - step) / rate : 0;
  int width = 24, fill = total_ > 0 ? (int)((double)step / total_ * width) : width;
  std::ostringstream os;
  os << label_ << " " << std::setw(5) << step << "/" << total_ << " [" << std::string(fill, '=') << std::string(width - fill, ' ')
     << "] loss " << std::fixed << std::setprecision(4) << loss;
  if (acc >= 0) os << " acc " << std::setprecision(3) << acc;
  os << std::setprecision(1) << " " << rate << " it/s ETA " << (int)eta << "s";
  if (tty_) std::cerr << "\r" << os.str() << "\033[K" << std::flush;
  else std::cerr << os.str() << "\n";
}

void Progress::finish() {
  if (tty_ && !quiet_) std::cerr << "\n";
}

std::string cell_dir(const std::string& out, const std::string& task, const std::string& model, const std::string& regime) {
  return out + "/cells/" + task + "__" + model + "__" + regime;
}

void write_text_atomic(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  dl::atomic_write_file(path, text);
}

void append_metrics_csv(const std::string& path, const std::string& cell, const CurvePoint& p) {
  bool fresh = !fs::exists(path);
  std::ofstream f(path, std::ios::app);
  if (fresh) f << "cell,phase,step,loss,accuracy,lr\n";
  f << cell << "," << p.phase << "," << p.step << "," << p.loss << "," << p.accuracy << "," << p.lr << "\n";
}

std::vector<CellResult> collect_results(const std::string& out) {
  std::vector<CellResult> rs;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(out + "/cells", ec)) {
    fs::path r = e.path() / "result.json";
    if (!fs::exists(r)) continue;
    std::ifstream in(r);
    try {
      rs.push_back(CellResult::from_json(json::parse(in)));
    } catch (const std::exception& ex) {
      std::cerr << "warning: skipping unreadable " << r << ": " << ex.what() << "\n";
    }
  }
  std::sort(rs.begin(), rs.end(), [](auto& a, auto& b) { return std::tie(a.task, a.model, a.regime) < std::tie(b.task, b.model, b.regime); });
  return rs;
}

std::string results_table_md(const std::vector<CellResult>& rs, const std::string& title) {
  std::ostringstream os;
  os << "# " << title << "\n\n";
  os << "| task | model | regime | val acc | test acc | SPT gain (test) | params | wall s | steps/s |\n";
  os << "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  std::map<std::string, double> scratch;
  for (auto& r : rs)
    if (r.regime == "scratch") scratch[r.task + "/" + r.model] = r.test_acc;
  os << std::fixed;
  for (auto& r : rs) {
    os << "| " << r.task << " | " << r.model << " | " << r.regime << " | " << std::setprecision(1) << 100 * r.val_acc << " | "
       << 100 * r.test_acc << " | ";
    auto it = scratch.find(r.task + "/" + r.model);
    if (r.regime != "scratch" && it != scratch.end()) os << std::showpos << 100 * (r.test_acc - it->second) << std::noshowpos;
    else os << "-";
    os << " | " << r.params << " | " << std::setprecision(0) << r.wall_s << " | " << std::setprecision(1) << r.steps_per_s << " |\n";
  }
  os << "\nAccuracies in %. SPT gain: test accuracy minus the same task/model trained from scratch.\n";
  return os.str();
}

bool have_gnuplot() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

void run_gnuplot(const std::string& script) {
  std::string cmd = "gnuplot '" + script + "' 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) {  // pngcairo may be missing in gnuplot-nox: fall back to png
    std::string alt = "sed -i 's/pngcairo/png/' '" + script + "' && gnuplot '" + script + "' 2>/dev/null";
    (void)std::system(alt.c_str());
  }
}

// One PNG per task: fine-tuning validation accuracy vs. step for every model and regime.
static void write_plots(const std::string& out, const std::vector<CellResult>& rs) {
  if (!have_gnuplot()) return;
  fs::create_directories(out + "/plots");
  std::map<std::string, std::vector<const CellResult*>> by_task;
  for (auto& r : rs) by_task[r.task].push_back(&r);
  for (auto& [task, cells] : by_task) {
    std::string dat = out + "/plots/" + task + ".dat", png = out + "/plots/" + task + ".png";
    std::ofstream d(dat);
    std::ostringstream plot;
    int idx = 0;
    for (auto* c : cells) {
      d << "# " << c->model << "/" << c->regime << "\n";
      for (auto& p : c->curve)
        if (p.phase == "finetune" && p.accuracy >= 0) d << p.step << " " << 100 * p.accuracy << "\n";
      d << "\n\n";
      plot << (idx ? ", " : "") << "'" << dat << "' index " << idx << " with linespoints title '" << c->model << " " << c->regime << "'";
      idx++;
    }
    d.close();
    std::string gp = out + "/plots/" + task + ".gp";
    std::ofstream g(gp);
    g << "set terminal pngcairo size 800,500 noenhanced\nset output '" << png << "'\n"
      << "set title 'LRA " << task << ": validation accuracy, scratch vs. self-pretrained'\n"
      << "set xlabel 'fine-tuning step'\nset ylabel 'accuracy (%)'\nset key bottom right\nset grid\n"
      << "plot " << plot.str() << "\n";
    g.close();
    run_gnuplot(gp);
  }
}

void write_reports(const std::string& out, const std::string& title) {
  auto rs = collect_results(out);
  json all = json::array();
  for (auto& r : rs) all.push_back(r.to_json());
  write_text_atomic(out + "/results.json", all.dump(2) + "\n");
  write_text_atomic(out + "/results.md", results_table_md(rs, title));
  // the combined metrics.csv: concatenation of the cells' logs
  std::ostringstream m;
  m << "cell,phase,step,loss,accuracy,lr\n";
  for (auto& r : rs) {
    std::ifstream in(cell_dir(out, r.task, r.model, r.regime) + "/metrics.csv");
    std::string line;
    bool header = true;
    while (std::getline(in, line)) {
      if (header) { header = false; continue; }
      m << line << "\n";
    }
  }
  write_text_atomic(out + "/metrics.csv", m.str());
  write_plots(out, rs);
}

}  // namespace lra
