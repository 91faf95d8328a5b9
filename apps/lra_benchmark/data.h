// apps/lra_benchmark/data.h - the app's side of the data: the task's splits for a config, batches as tensors,
// the self-pretraining objectives on a batch, and evaluation over a split.
//
//   scratch / fine-tuning   classify(batch) -> cross-entropy with the labels
//   spt-causal              next-token prediction on the training split's sequences (token tasks only)
//   spt-masked              masked denoising: tokens replaced with p = mask_prob (BERT's 80/10/10; CE on the
//                           masked tokens), or continuous positions zeroed with a mask channel set (L1 on them)
//   text-masked             the same masked denoising, but on English text instead of the task's data
//                           (text_corpus_data below): pretraining on a corpus vs on the task itself
// Retrieval's two towers each see their own corrupted sequence. tasks/objectives.h does the per-sequence work.
#pragma once
#include <random>
#include <string>

#include "apps/common/batch_check.h"
#include "apps/common/batch_tensors.h"
#include "apps/common/comm.h"
#include "config.h"
#include "model.h"
#include "tasks/batching.h"
#include "tasks/dataset.h"

namespace lra {

// The task's data for a config, generated once per process and shared by the cells of a sweep. With train_limit > 0
// the training split is a random subset of that many examples (fixed by the seed; nested across limits), the
// validation and test splits those of the whole task.
const dl::tasks::TaskData& task_data(const CellConfig& c);

// The pretraining data of the text-masked regime: windows of Debian's `fortunes` (tasks/english.h) as the task's
// byte tokens (tasks/tokenizer.h: id = byte + 5), one window per example of the task's training and validation
// splits and as long as that example (both sequences of a retrieval pair), cut at offsets drawn from the seed. The
// training windows come from the first 95% of the corpus, the validation ones from the last 5%. Fortunes, not Brown:
// the byte tasks' embedded documents (Text, Retrieval) are Brown's, and pretraining on them would be pretraining on
// the task. Labels are kept (the pretraining loss ignores them). A task whose tokens are not bytes (vocabulary other
// than 261, or continuous inputs) is a ConfigError naming it; no fortunes installed, a DataError naming the package.
dl::tasks::TaskData text_corpus_data(const CellConfig& c, const dl::tasks::TaskData& task);

// The model's input/output shape for a task: vocab or features, classes, two towers, and the longest sequence of
// any split (the positions table's size). A task without classes whose examples carry one target each is a regression
// task: classes 1, and the training split's target mean and standard deviation standardise the target.
TaskShape shape_of(const dl::tasks::TaskData& d);

// Batch -> tensors. `second` picks tokens2 (the other tower of a retrieval pair). Continuous inputs get the
// (zero) mask channel the masked objective uses.
Inputs to_inputs(const dl::tasks::Batch& b, bool second = false);

// The model's output on a batch (B, classes; a regression task's (B, 1)), both towers where the task has two.
dl::Var classify_batch(LraModel& m, const dl::harness::BatchTensors& t, const dl::tasks::Batch& b);
// A split's batches in its order, `batch` examples each (the last may be smaller): how evaluation reads a split.
dl::tasks::Batcher in_order(const dl::tasks::Dataset& d, int batch);

// The fine-tuning loss of a batch: cross-entropy of classify() with the labels.
dl::Var classification_loss(LraModel& m, const dl::tasks::Batch& b);
// A regression task's: MSE (or L1, m.cfg.loss) of the head's output against the standardised targets.
dl::Var regression_loss(LraModel& m, const dl::tasks::Batch& b);
// The one a cell fine-tunes with: regression_loss for a regression task, else classification_loss.
dl::Var finetune_loss(LraModel& m, const dl::tasks::Batch& b);
// The self-pretraining loss of a batch (both towers averaged for retrieval); rng draws the corruption.
dl::Var pretrain_loss(LraModel& m, const dl::tasks::Batch& b, const CellConfig& c, int pad_id, std::mt19937_64& rng);

// What the model reads from a batch of split d (checked at the batch boundary, apps/common/batch_check.h): token ids
// in the embedding's vocab + 1 rows (the last is the mask token) when fine-tuning or evaluating, but in the
// pretraining head's vocab outputs when pretraining (the corrupted tokens are its targets); labels in the head's
// classes (not when pretraining: it ignores them); at most max_len positions, the length the mixers and position
// table are sized to.
dl::harness::BatchLimits batch_limits(bool pretrain, const LraModel& m, const dl::tasks::Dataset& d);

struct SplitEval {
  double accuracy = 0, loss = 0;
  double rmse = 0, mae = 0;  // a regression task: root mean squared and mean absolute error, in the target's units
  int64_t examples = 0;
};
// Accuracy and mean cross-entropy over a split (a regression task: RMSE, MAE and the fine-tuning loss; accuracy 0) (all of it, or its first max_batches batches in dataset order).
// With several ranks each evaluates every size-th batch and the sums are all-reduced: every rank gets the result.
// Each batch is checked against batch_limits(false, m, d) first: a bad example of the split is named, not read.
SplitEval evaluate_split(LraModel& m, const dl::tasks::Dataset& d, int batch, int max_batches,
                         dl::harness::Communicator& comm = dl::harness::single_process());
// The pretraining loss on (the first max_batches batches of) a split, with a fixed corruption so evaluations compare;
// batches checked against batch_limits(true, m, d).
double pretrain_val_loss(LraModel& m, const dl::tasks::Dataset& d, const CellConfig& c, int max_batches,
                         dl::harness::Communicator& comm = dl::harness::single_process());

}  // namespace lra
