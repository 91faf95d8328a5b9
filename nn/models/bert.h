// nn/models/bert.h - BERT (Devlin et al. 2019) with Hugging Face BertForPreTraining's state_dict names: the encoder,
// the masked-LM and next-sentence heads it is pretrained with, and the sequence classifier it is fine-tuned as.
//
// Shape letters: B batch, T padded length, C = d_model, V vocabulary, M masked positions.
//   input      [CLS] A [SEP] B [SEP] as ids; segment 0 up to and including the first [SEP], 1 after (bert_batch)
//   embedding  x = LayerNorm(word[ids] + position[t] + token_type[seg]); dropout                   (B, T, C)
//   encoder    L TransformerEncoderLayers (nn/models/transformer.h, gelu) under the key mask - post-LN as BERT by
//              default, pre-LN (plus a final LayerNorm, bert.encoder.LayerNorm) when norm_first
//   pooler     pooled = tanh(pooler.dense(h[:, 0]))                                                (B, C)
//   MLM head   logits = LayerNorm(gelu(dense(h))) word^T + bias at the masked positions only         (M, V)
//              (the decoder is tied to the word embeddings: BERT's cls.predictions)
//   NSP head   logits = seq_relationship(pooled); index 0 = IsNext (HF's next_sentence_label 0)     (B, 2)
//   classifier logits = classifier(dropout(pooled))  (HF BertForSequenceClassification, dropout 0.1)  (B, K)
// Initialisation (BERT's): matrices N(0, 0.02), biases 0, LayerNorm gains 1; optionally the learned positions start
// as sinusoids scaled to the same std (sinusoidal_positions).
// Names: bert.embeddings.{word,position,token_type}_embeddings, bert.embeddings.LayerNorm, bert.pooler.dense,
// cls.predictions.{transform.dense, transform.LayerNorm, bias}, cls.seq_relationship, classifier; the encoder layers
// keep torch.nn's names inside bert.encoder.layer.<i> (self_attn.in_proj_weight, linear1, norm1, ...) since they
// are torch's TransformerEncoderLayer. A pretrained BertForPreTraining's file loads into a BertClassifier with the
// cls.* entries ignored and classifier.* missing (nn::LoadOptions).
// What it is not: a tokenizer (ids come from the caller; apps/studies/nsp_bert.h reads bytes) or HF's 80/10/10
// masking (the caller masks); sizes are small by default (d 128, 2 layers), as a CPU study trains it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/models/transformer.h"

namespace dl::nn {

struct BertConfig {
  int64_t vocab = 261, max_len = 131, d_model = 128, layers = 2, heads = 4, dim_ff = 512;
  double dropout = 0.0;     // BERT's 0.1 where asked; the embeddings' and the encoder layers'
  bool norm_first = false;  // false: post-LN as BERT; true: pre-LN with a final LayerNorm (bert.encoder.LayerNorm)
  // true: the learned position table starts as sinusoids (Vaswani et al. 2017) scaled to the 0.02 std of the other
  // embeddings, instead of BERT's N(0, 0.02): offsets t +- k are then linear maps of t from the first step
  bool sinusoidal_positions = false;
};

// Token ids (B, T) i64, segment ids (B, T) i64 and the key mask (B, T) f32 (1 = real) of a padded batch.
struct BertBatch {
  Tensor ids, types, mask;
  int64_t B = 0, T = 0;
};
// The sequences right-padded with id 0; a row's segment is 0 up to and including its first `sep_id`, 1 after.
BertBatch bert_batch(const std::vector<std::vector<int32_t>>& seqs, int32_t sep_id);

class BertModel : public Module {  // HF BertModel: embeddings, encoder, pooler
 public:
  BertModel(const BertConfig& c, Generator& g);  // a d_model that heads do not divide is std::invalid_argument
  std::string type_name() const override { return "BertModel"; }
  Var forward(const BertBatch& b);  // hidden states (B, T, C); T > max_len is std::invalid_argument
  Var pooled(const Var& hidden);    // tanh(pooler.dense(h[:, 0])) (B, C)
  std::shared_ptr<Module> embeddings, encoder, pooler;
  std::shared_ptr<Embedding> word, position, token_type;
  std::shared_ptr<LayerNorm> emb_norm, final_norm;  // final_norm only when norm_first
  std::shared_ptr<Dropout> drop;
  std::shared_ptr<ModuleList<TransformerEncoderLayer>> layer;
  std::shared_ptr<Linear> pool_dense;
  BertConfig cfg;
};

class BertForPreTraining : public Module {  // bert + cls.{predictions, seq_relationship}
 public:
  BertForPreTraining(const BertConfig& c, Generator& g);
  std::string type_name() const override { return "BertForPreTraining"; }
  // MLM logits (M, V) at the flat positions `at` (indices into B*T) of hidden (B, T, C).
  Var mlm_logits(const Var& hidden, const Tensor& at);
  Var nsp_logits(const Var& hidden);  // (B, 2), index 0 = IsNext
  std::shared_ptr<BertModel> bert;
  std::shared_ptr<Module> cls, predictions, transform;
  std::shared_ptr<Linear> transform_dense, seq_relationship;
  std::shared_ptr<LayerNorm> transform_norm;
  Var mlm_bias;  // cls.predictions.bias (V)
};

class BertClassifier : public Module {  // HF BertForSequenceClassification: bert + dropout + classifier
 public:
  BertClassifier(const BertConfig& c, int64_t classes, Generator& g);
  std::string type_name() const override { return "BertClassifier"; }
  Var forward(const BertBatch& b);  // logits (B, classes)
  std::shared_ptr<BertModel> bert;
  std::shared_ptr<Dropout> drop;
  std::shared_ptr<Linear> classifier;
};

}  // namespace dl::nn
