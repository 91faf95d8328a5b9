// apps/fpt/app.h - the FPT app as the harness sees it (axes task and arm); main.cpp adds pretrain, sweep-lr and attention.
#pragma once
#include "apps/common/experiment.h"

namespace fpt {

dl::harness::Experiment experiment();

}  // namespace fpt
