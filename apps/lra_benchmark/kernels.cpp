// apps/lra_benchmark/kernels.cpp - learned kernels and their envelopes (see kernels.h).
#include "kernels.h"

#include <cmath>
#include <sstream>

#include "apps/common/report.h"
#include "apps/common/results.h"

namespace lra {

using namespace dl;
namespace harness = dl::harness;

// The convolution kernel of the first block's mixer as a float32 (directions, H, L) tensor; undefined for layers
// without one (SequenceLayer::learned_kernel).
static Tensor first_ssm_kernel(LraModel& m, int64_t L) {
  if (m.num_blocks() == 0) return Tensor();
  return m.block(0).mixer().learned_kernel(L);
}

std::vector<float> kernel_envelope(LraModel& m, int64_t L) {
  Tensor k = first_ssm_kernel(m, L);
  if (!k.defined()) return {};
  const int64_t rows = k.size(0) * k.size(1), n = k.size(2);
  const float* pk = k.data<float>();
  std::vector<float> env(n, 0.f);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t l = 0; l < n; l++) env[l] = std::max(env[l], std::fabs(pk[r * n + l]));
  return env;
}

void write_learned_kernels(LraModel& m, const std::string& cdir, int64_t L, const KernelHistory& hist) {
  Tensor k = first_ssm_kernel(m, L);
  if (!k.defined()) return;
  const int64_t H = k.size(1), n = std::min<int64_t>(k.size(2), 512), shown = std::min<int64_t>(H, 4);
  const float* pk = k.data<float>();
  std::ostringstream dat;
  dat << "# lag l, then K[0, h, l] for h = 0.." << shown - 1 << " (first block, first direction)\n";
  for (int64_t l = 0; l < n; l++) {
    dat << l;
    for (int64_t h = 0; h < shown; h++) dat << " " << pk[h * k.size(2) + l];
    dat << "\n";
  }
  harness::write_text_atomic(cdir + "/kernels.dat", dat.str());

  // The paper's Figure 4 statistic: max over channels (and both directions) of |K[., ., l]|, here before training,
  // after self-pretraining (SPT cells) and after fine-tuning.
  std::vector<std::pair<std::string, std::vector<float>>> cols;
  if (!hist.init.empty()) cols.push_back({"initialisation", hist.init});
  if (!hist.pretrained.empty()) cols.push_back({"after pretraining", hist.pretrained});
  cols.push_back({"after fine-tuning", kernel_envelope(m, L)});
  std::ostringstream env;
  env << "# lag l, then max over channels and directions of |K[., ., l]| (first block):";
  for (auto& [name, v] : cols) env << " " << name << ";";
  env << "\n";
  for (int64_t l = 0; l < n; l++) {
    env << l;
    for (auto& [name, v] : cols) {
      if ((int64_t)v.size() <= l)
        throw std::logic_error("write_learned_kernels: '" + name + "' has " + std::to_string(v.size()) +
                               " lags, expected at least " + std::to_string(n));
      env << " " << v[l];
    }
    env << "\n";
  }
  harness::write_text_atomic(cdir + "/kernels_max.dat", env.str());

  if (!harness::have_gnuplot()) return;
  std::ostringstream gp;
  gp << "set terminal pngcairo size 800,800 noenhanced\nset output '" << cdir << "/kernels.png'\n"
     << "set multiplot layout 2,1\nset grid\nset xlabel 'lag l'\n"
     << "set title 'max over channels of |K[c, l]|, block 0: " << m.cfg.key() << "'\nset ylabel 'max_c |K[c, l]|'\n"
     << "set logscale y\nplot ";
  for (size_t i = 0; i < cols.size(); i++)
    gp << (i ? ", " : "") << "'" << cdir << "/kernels_max.dat' using 1:" << i + 2 << " with lines title '" << cols[i].first
       << "'";
  gp << "\nunset logscale y\nset title 'learned kernels of the first channels (after fine-tuning)'\nset ylabel 'K[h, l]'\nplot ";
  for (int64_t h = 0; h < shown; h++)
    gp << (h ? ", " : "") << "'" << cdir << "/kernels.dat' using 1:" << h + 2 << " with lines title 'channel " << h << "'";
  gp << "\nunset multiplot\n";
  harness::write_text_atomic(cdir + "/kernels.gp", gp.str());
  harness::run_gnuplot(cdir + "/kernels.gp");
}

}  // namespace lra
