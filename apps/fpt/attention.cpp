// apps/fpt/attention.cpp - see attention.h.
#include "attention.h"

#include <filesystem>
#include <iostream>
#include <sstream>

#include "apps/common/report.h"
#include "apps/common/results.h"
#include "data.h"
#include "model.h"
#include "tensor/safetensors.h"

namespace fpt {

using namespace dl;
namespace harness = dl::harness;

void write_attention_maps(const std::string& cell_dir, int example) {
  const std::string path = cell_dir + "/model.safetensors";
  TensorFile f = load_safetensors(path);
  const CellConfig c = harness::checked_config_in_metadata<CellConfig>(f.metadata, path, "fpt");
  if (c.arm == "lstm") throw ConfigError(path + ": an LSTM cell has no attention");
  const FptTask& t = fpt_task(c);
  if (example < 0 || example >= (int)t.data.test.examples.size())
    throw ConfigError("--example " + std::to_string(example) + ": the test split has " +
                      std::to_string(t.data.test.examples.size()) + " examples");
  Generator g(0);
  FptModel m(c, t, g);
  m.load(path);
  m.eval();
  tasks::Batcher bt(t.data.test, {1, 0, false});
  tasks::Batch b = bt.collate({example});
  std::vector<Var> att;
  {
    NoGradGuard ng;
    m.forward(to_batch(t, b), &att);
  }
  const std::string dir = cell_dir + "/attention";
  for (size_t layer = 0; layer < att.size(); layer++) {
    Tensor w = att[layer].data().contiguous();  // (1, NH, T, T)
    const int64_t NH = w.size(1), T = w.size(2);
    std::ostringstream d;
    for (int64_t q = 0; q < T; q++) {
      for (int64_t k = 0; k < T; k++) {
        double s = 0;
        for (int64_t h = 0; h < NH; h++) s += w.at({0, h, q, k}) / NH;
        d << (k ? " " : "") << s;
      }
      d << "\n";
    }
    const std::string base = dir + "/layer" + std::to_string(layer);
    harness::write_text_atomic(base + ".dat", d.str());
    std::ostringstream gp;
    gp << "set terminal pngcairo size 520,480 noenhanced\nset output '" << base << ".png'\n"
       << "set title '" << c.key() << ": layer " << layer << " attention (mean of " << NH << " heads), test example " << example
       << "'\n"
       << "set xlabel 'key position'\nset ylabel 'query position'\nset yrange [" << T - 0.5
       << ":-0.5]\nset xrange [-0.5:" << T - 0.5 << "]\n"
       << "set palette grey negative\nplot '" << base << ".dat' matrix with image notitle\n";
    harness::write_text_atomic(base + ".gp", gp.str());
    if (harness::have_gnuplot()) harness::run_gnuplot(base + ".gp");
  }
  std::cout << "wrote " << att.size() << " attention maps (" << dir << "/layer<k>.{dat,png})\n";
}

}  // namespace fpt
