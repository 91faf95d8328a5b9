// apps/s4_kernel - print an S4D (or S4) convolution kernel and write it as CSV (and PNG when gnuplot exists).
// The runnable example of docs/s4.md: the kernel K[h, l] = 2 Re sum_n C_n Bbar_n Abar_n^l of nn/ssm/s4d.h, at
// initialisation or from a checkpoint (--load, safetensors with the layer's parameter names).
//   ./s4_kernel --init lin --disc zoh --H 4 --N 64 --L 256 --out /tmp/s4k
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "nn/registry.h"

using namespace dl;

int main(int argc, char** argv) {
  CLI::App app{"Print an S4D/S4 convolution kernel and write it as CSV (+ PNG via gnuplot)"};
  std::string kind = "s4d", init = "lin", disc = "zoh", out = "s4_kernel_out", load;
  int64_t H = 4, N = 64, L = 256, show = 8;
  uint64_t seed = 0;
  app.add_option("--kind", kind, "s4d or s4 (DPLR)")->check(CLI::IsMember({"s4d", "s4"}));
  app.add_option("--init", init, "S4D init: lin, inv, legs, real")->check(CLI::IsMember({"lin", "inv", "legs", "real"}));
  app.add_option("--disc", disc, "S4D discretisation: zoh or bilinear")->check(CLI::IsMember({"zoh", "bilinear"}));
  app.add_option("--H", H, "channels");
  app.add_option("--N", N, "state size (even)");
  app.add_option("--L", L, "kernel length");
  app.add_option("--show", show, "taps printed per channel");
  app.add_option("--seed", seed, "random seed");
  app.add_option("--load", load, "safetensors checkpoint of the layer (names as the layer's state_dict)");
  app.add_option("--out", out, "output folder");
  CLI11_PARSE(app, argc, argv);

  Generator g(seed);
  nlohmann::json cfg = {{"d_state", N}};
  if (kind == "s4d") cfg["init"] = init, cfg["disc"] = disc;
  auto layer = nn::make_layer(kind, H, cfg, g);
  if (!load.empty()) {
    nn::LoadOptions lo;
    lo.strict = false;
    std::printf("%s\n", layer->load(load, lo).str().c_str());
  }
  Tensor K = layer->learned_kernel(L).select(0, 0).contiguous();  // (H, L) of the first kernel channel
  for (int64_t h = 0; h < H; h++) {
    std::printf("K[%ld, :%ld] =", (long)h, (long)show);
    for (int64_t l = 0; l < std::min(show, L); l++) std::printf(" %+.4f", K.at({h, l}));
    std::printf("\n");
  }
  std::filesystem::create_directories(out);
  const std::string csv = out + "/kernel.csv";
  std::ofstream f(csv);
  f << "l";
  for (int64_t h = 0; h < H; h++) f << ",h" << h;
  f << "\n";
  for (int64_t l = 0; l < L; l++) {
    f << l;
    for (int64_t h = 0; h < H; h++) f << "," << K.at({h, l});
    f << "\n";
  }
  f.close();
  std::printf("wrote %s\n", csv.c_str());
  if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {
    std::string plot = "set datafile separator ','; set terminal png size 900,500; set output '" + out +
                       "/kernel.png'; set xlabel 'l'; set ylabel 'K[h, l]'; plot for [i=2:" + std::to_string(H + 1) + "] '" +
                       csv + "' using 1:i with lines title columnhead(i)";
    if (std::system(("gnuplot -e \"" + plot + "\"").c_str()) == 0) std::printf("wrote %s/kernel.png\n", out.c_str());
  }
  return 0;
}
