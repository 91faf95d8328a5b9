// apps/pretrained_convs/app.cpp - see app.h.
#include "app.h"

#include "apps/common/typed_experiment.h"
#include "cell.h"
#include "config.h"
#include "report.h"

namespace pconv {

namespace harness = dl::harness;

harness::Experiment experiment() {
  harness::Experiment e = harness::typed_experiment<CellConfig>(
      "pretrained_convs", "Are pre-trained convolutions better than pre-trained Transformers? (Tay et al. 2021)", presets_dir(),
      harness::axis_specs(axes(), {{"regime", "pretrained"}}), run_cell);
  e.report = pconv_report;
  e.list = [](std::ostream& os) {
    os << "models: transformer (T5 self-attention, relative position bias), lightconv, dynamicconv, dilatedconv (GLU +\n"
          "  softmax-normalised depthwise convolution; causal in the decoder, which keeps cross-attention), any other\n"
          "  registry layer as the mixer (`lra_benchmark list` names them; fnet and mixer are refused: they cannot run\n"
          "  causally or need a fixed length), and <layer>_xattn (one pair-attention block on top of the encoder). Other\n"
          "  mixers get the Transformer's parameter count by their d_ff (match_params).\n"
          "regimes: scratch, pretrained (T5 span corruption on Brown + fortunes, cached per model)\n"
          "tasks: sentiment (UCI labelled sentences), topic (Brown genres), questions (TREC-like), compositional\n"
          "  (SCAN-like, held-out combinations), pair_edit (does B repeat A?), textfile (your TSV/CSV), imdb (aclImdb)\n";
  };
  return e;
}

}  // namespace pconv
