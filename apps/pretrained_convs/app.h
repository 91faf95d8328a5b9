// apps/pretrained_convs/app.h - the app as the harness sees it (axes task, model, regime); main.cpp adds pretrain,
// finetune, eval and speed.
#pragma once
#include "apps/common/experiment.h"

namespace pconv {

dl::harness::Experiment experiment();

}  // namespace pconv
