// apps/pretrained_convs/model.h - a cell's encoder-decoder (nn/models/seq2seq.h) with equal parameter budgets, and
// the text-to-text batch: encoder bytes and mask, pair segments, decoder labels.
//
// Equal budgets (match_params): a model's parameter count is linear in d_ff, P(d_ff) = a + b d_ff with
// b = 2 d_model (layers + decoder_layers); a convolutional model takes the d_ff whose P is nearest the
// Transformer's at the configured d_ff. The _xattn variants keep their base model's d_ff and add the pair
// block's parameters on top (so they load the base model's pretrained weights).
#pragma once
#include <memory>

#include "apps/common/batch_check.h"
#include "config.h"
#include "data.h"
#include "nn/models/seq2seq.h"
#include "tasks/batching.h"

namespace pconv {

struct ModelPlan {
  dl::nn::Seq2SeqConfig cfg;       // d_ff after matching
  int64_t params = 0;              // this model's
  int64_t transformer_params = 0;  // the Transformer's of the same depth and width
};
ModelPlan plan_model(const CellConfig& c);

// What the model reads from a batch of split d (apps/common/batch_check.h): source (tokens) and target (tokens2,
// the decoder's labels) ids in its vocabulary, sentinels included; no classes (the labels are sequences) and no
// position limit (T5's relative buckets and the convolutions take any length). Training and evaluation check it.
dl::harness::BatchLimits batch_limits(const dl::nn::Seq2SeqConfig& m, const dl::tasks::Dataset& d);

struct Seq2SeqBatch {
  dl::Tensor ids, mask, segments, labels;  // (B, S) i64, (B, S) f32, (B, S) i64 or undefined, (B, T) i64 (-100 pad)
};
Seq2SeqBatch to_batch(const dl::tasks::Batch& b, bool pair);

// A finished cell's encoder-decoder from its model file (the cell's config is read from the file's metadata):
// eval, predict and export rebuild it this way.
struct CellModel {
  CellConfig config;
  std::unique_ptr<dl::nn::Seq2SeqModel> model;
};
CellModel load_cell_model(const std::string& model_file);

// The greedy outputs of a batch, decoded to text (decode_bytes), one a row.
std::vector<std::string> greedy_texts(dl::nn::Seq2SeqModel& m, const dl::tasks::Batch& b, const Seq2SeqTask& t);

// Greedy-decodes a batch; counts the outputs equal to their target (class tasks: the decoded word is the label's)
// and those that are no label's word. Returns the number of rows.
struct DecodeCount {
  int64_t right = 0, not_a_label = 0, n = 0;
};
DecodeCount decode_and_count(dl::nn::Seq2SeqModel& m, const dl::tasks::Batch& b, const Seq2SeqTask& t);

}  // namespace pconv
