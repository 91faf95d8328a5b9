// apps/lra_benchmark/app.h - the LRA benchmark as the harness sees it: its axes (task, model, regime), presets,
// how a cell resolves and runs, its table and its `list` lines. main.cpp adds the app's own subcommands.
#pragma once
#include "apps/common/experiment.h"

namespace lra {

dl::harness::Experiment experiment();

}  // namespace lra
