// apps/pretrained_convs/report.h - the table (task x model x regime: parameters, validation and test accuracy, the
// held-out accuracy for the compositional task, outputs that are no label, the pretraining gain, steps/s), the
// paper's qualitative findings each marked reproduced / not reproduced / not measured at this scale, and the plots
// (test accuracy bars per task; validation curves).
#pragma once
#include <string>
#include <vector>

#include "apps/common/config.h"
#include "apps/common/report.h"
#include "apps/common/results.h"

namespace pconv {

dl::harness::Table pconv_report(const std::string& out, const dl::harness::Preset& p,
                                const std::vector<dl::harness::CellResult>& rs);

}  // namespace pconv
