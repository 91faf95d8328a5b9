// tests/apps/test_study_eval_checks.cpp - the studies' evaluation loops check their batches against the model being
// evaluated, as the training phase does (apps/common/batch_check.h): nsp_bert's evaluate_pretraining names a
// validation pair whose byte id lies beyond the BERT's vocabulary, with the batch and the example, instead of
// leaving it to the embedding's gather ("embedding: index 131 out of range ..."). The mixers study's accuracy checks
// its batches too; its splits come from the task registry's generators, whose ids, labels and lengths lie inside
// what the model is built for, so no test can doctor them from outside.
#include <gtest/gtest.h>

#include "app_test_util.h"
#include "apps/studies/nsp_bert.h"

using namespace dl;
using dl::test::error_of;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A BERT of 120 ids reads byte ids up to 260 (byte + 5): 'a' is 102, '~' is 131.
studies::PretrainOptions small_bert() {
  studies::PretrainOptions o;
  o.bert.vocab = 120, o.bert.d_model = 16, o.bert.layers = 1, o.bert.heads = 2, o.bert.dim_ff = 32, o.bert.max_len = 35;
  o.max_a = 16, o.max_b = 16, o.batch = 4, o.steps = 2, o.val_pairs = 8;
  return o;
}

}  // namespace

TEST(StudyEvaluationChecks, NspBertValidationPairsOutsideTheVocabularyAreNamed) {
  // the training sentences fit the vocabulary, the validation ones hold '~': the evaluation of the untrained model,
  // before the first step, names the first validation pair
  std::vector<studies::SentenceDoc> train, val;
  for (int k = 0; k < 8; k++) {
    train.push_back({}), val.push_back({});
    for (int i = 0; i < 6; i++) train.back().push_back("ab ba" + std::to_string(i) + "."), val.back().push_back("ab~ ba.");
  }
  const studies::PretrainOptions o = small_bert();
  harness::RunContext ctx;
  ctx.out = ctx.dir = dl::test::app_temp_dir("study_eval_checks_nsp_bert"), ctx.quiet = true;
  Generator g(0);
  studies::BertForPreTraining m(o.bert, g);
  nlohmann::json info;
  const std::string msg = error_of([&] { studies::pretrain_bert(m, g, train, val, o, ctx, info); });
  EXPECT_TRUE(contains(msg, "[nsp-bert] evaluation batch 0: nsp_val_pairs example 0 (row 0 of the batch): tokens[")) << msg;
  EXPECT_TRUE(contains(msg, "] = 131 is outside the model's vocabulary [0, 120)")) << msg;
}

TEST(StudyEvaluationChecks, NspBertPairsInsideTheVocabularyPassTheCheck) {
  // no false alarm on clean pairs over two batches (the second one partial); every pair is evaluated, twice alike
  const studies::PretrainOptions o = small_bert();
  std::vector<studies::NspPair> pairs;
  for (int i = 0; i < 70; i++) pairs.push_back({"ab ba" + std::to_string(i % 10) + ".", "ba ab.", i % 2, 0, i});
  Generator g(0);
  studies::BertForPreTraining m(o.bert, g);
  const studies::PretrainMetrics a = studies::evaluate_pretraining(m, pairs, o), b = studies::evaluate_pretraining(m, pairs, o);
  EXPECT_EQ(a.pairs, 70);  // two batches: 64 + 6
  EXPECT_EQ(a.mlm_loss, b.mlm_loss);
  EXPECT_EQ(a.nsp_accuracy, b.nsp_accuracy);
  EXPECT_EQ(studies::evaluate_pretraining(m, {}, o).pairs, 0);  // no pairs: zeros, no error
}
