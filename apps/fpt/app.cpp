// apps/fpt/app.cpp - see app.h.
#include "app.h"

#include "apps/common/typed_experiment.h"
#include "cell.h"
#include "config.h"
#include "report.h"

namespace fpt {

namespace harness = dl::harness;

harness::Experiment experiment() {
  harness::Experiment e = harness::typed_experiment<CellConfig>(
      "fpt", "FPT: frozen pretrained transformers as universal computation engines (Lu et al. 2021)", presets_dir(),
      harness::axis_specs(axes()), run_cell, depth_of_arm);
  e.report = fpt_report;
  e.list = [](std::ostream& os) {
    os << "arms: fpt (language-pretrained, attention and feed-forward frozen), full (random, all trained), full_lang\n"
          "  (language-pretrained, all trained), lstm, random / bitmem (frozen as fpt), out_only, out_in, out_in_pos,\n"
          "  fpt_ff, fpt_attn (the parameter ablations); fpt-L<k>, random-L<k> (k layers, the depth study)\n"
          "tasks: digits (the 8x8 digits of python3-sklearn, 16 tokens of 2x2), homology (family recognition from\n"
          "  sequences sampled from hmmer-examples' profile HMMs, a stand-in for TAPE remote homology)\n";
  };
  return e;
}

}  // namespace fpt
