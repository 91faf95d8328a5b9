// apps/studies/nsp_bert_report.h - the tables and plots of `studies nsp-bert` from its finished cells (see nsp_bert.h):
// the pretrained model on held-out documents, zero-shot against chance, the majority class and the fine-tunes, and
// each template's zero-shot accuracy; written as <out>/nsp_bert.{md,json} and <out>/plots/*, as before the harness.
#pragma once
#include <string>
#include <vector>

#include "apps/common/config.h"
#include "apps/common/report.h"
#include "apps/common/results.h"

namespace studies {

// The harness's report hook: returns the pretraining table with the other two as its notes (results.md).
dl::harness::Table nsp_bert_report(const std::string& out, const dl::harness::Preset& p,
                                   const std::vector<dl::harness::CellResult>& cells);

}  // namespace studies
