// apps/lra_benchmark/app.cpp - see app.h.
#include "app.h"

#include "apps/common/typed_experiment.h"
#include "cell.h"
#include "config.h"
#include "nn/models/model_registry.h"
#include "nn/registry.h"
#include "report.h"
#include "tasks/registry.h"

namespace lra {

namespace harness = dl::harness;

harness::Experiment experiment() {
  harness::Experiment e = harness::typed_experiment<CellConfig>(
      "lra_benchmark", "LRA benchmark: scratch vs. self-pretrained Transformers and state-space models (Amos et al. 2023)",
      presets_dir(), harness::axis_specs(axes(), {{"regime", "scratch"}}), run_cell);
  e.cost = [](const harness::Cell& cell) {  // training steps: self-pretrained cells run their pretraining first
    const CellConfig c = harness::config_of<CellConfig>(cell);
    return (double)c.steps + (c.regime != "scratch" ? c.pretrain_steps : 0);
  };
  e.report = lra_report;
  e.list = [](std::ostream& os) {
    os << "the paper's models: " << harness::join(kPaperModels) << " (any registry layer works as a model)\ntasks:\n";
    for (auto& t : dl::tasks::task_registry()) os << "  " << t.name << "  - " << t.description << "\n";
    os << "models (nn/models/model_registry.cpp; each a registry layer in the backbone):\n";
    for (auto& m : dl::nn::model_registry())
      os << "  " << m.name << "  - " << m.summary << " [" << dl::nn::family_name(m.family)
         << (m.name != m.layer ? ", layer " + m.layer : "") << (m.layer_cfg.empty() ? "" : " " + m.layer_cfg) << "]\n";
  };
  return e;
}

}  // namespace lra
