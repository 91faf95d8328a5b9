// apps/classify/classify.h - the classify app as the harness sees it (axes task and layer; classify.cpp has the model
// and the cell), so tests can run its cells in-process (tests/cuda_logic/test_app_cells.cpp: on the host twin of the
// CUDA backend against the CPU).
#pragma once
#include "apps/common/experiment.h"

namespace classify {

dl::harness::Experiment experiment();

}  // namespace classify
