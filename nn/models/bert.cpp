// nn/models/bert.cpp - BERT's embeddings, encoder, pooler and heads (see bert.h). Shape letters: B batch, T padded
// length, C d_model, V vocabulary, M masked positions.
#include "nn/models/bert.h"

#include <cmath>
#include <stdexcept>

#include "autograd/ops.h"
#include "nn/init.h"

namespace dl::nn {

BertBatch bert_batch(const std::vector<std::vector<int32_t>>& seqs, int32_t sep_id) {
  BertBatch b;
  b.B = (int64_t)seqs.size();
  for (auto& s : seqs) b.T = std::max<int64_t>(b.T, (int64_t)s.size());
  b.ids = zeros({b.B, b.T}, DType::i64), b.types = zeros({b.B, b.T}, DType::i64), b.mask = zeros({b.B, b.T});
  int64_t *id = b.ids.data<int64_t>(), *ty = b.types.data<int64_t>();
  float* mk = b.mask.data<float>();
  for (int64_t i = 0; i < b.B; i++) {
    int seg = 0;
    for (size_t t = 0; t < seqs[i].size(); t++) {
      id[i * b.T + t] = seqs[i][t], ty[i * b.T + t] = seg, mk[i * b.T + t] = 1;
      if (seqs[i][t] == sep_id) seg = 1;  // the first [SEP] still belongs to segment 0
    }
  }
  return b;
}

// A named container, so the tree has Hugging Face's paths (bert.embeddings.LayerNorm, cls.predictions.transform, ...).
namespace {
struct Node : Module {
  explicit Node(std::string t) : type(std::move(t)) {}
  std::string type;
  std::string type_name() const override { return type; }
  template <class M> std::shared_ptr<M> add(const std::string& name, std::shared_ptr<M> m) { return register_module(name, m); }
  Var param(const std::string& name, Tensor init) { return register_parameter(name, std::move(init)); }
};
template <class M>
std::shared_ptr<M> add_to(const std::shared_ptr<Module>& parent, const std::string& name, std::shared_ptr<M> m) {
  return static_cast<Node&>(*parent).add(name, std::move(m));
}

// BERT's initialisation: matrices N(0, 0.02), biases 0, LayerNorm weights 1; optionally sinusoidal positions
// PE[t, 2i] = sin(t / 10000^(2i/C)), PE[t, 2i+1] = cos(...), times 0.02 sqrt(2) (so their std is 0.02 too).
void bert_init(Module& m, BertModel& bert, Generator& g) {
  for (auto& [name, p] : m.named_parameters()) {
    if (p.data().dim() == 2) p.mutable_data().copy_(init::normal(p.shape(), 0.02, g));
    else if (name.ends_with("bias")) p.mutable_data().zero_();
  }
  if (!bert.cfg.sinusoidal_positions) return;
  Tensor pe = bert.position->weight.mutable_data();  // (max_len, C), contiguous
  const int64_t C = pe.size(1);
  for (int64_t t = 0; t < pe.size(0); t++)
    for (int64_t i = 0; i < C; i++) {
      const double angle = t / std::pow(10000.0, (double)(i - i % 2) / C);
      pe.data<float>()[t * C + i] = (float)(0.02 * std::sqrt(2.0) * (i % 2 ? std::cos(angle) : std::sin(angle)));
    }
}
}  // namespace

BertModel::BertModel(const BertConfig& c, Generator& g) : cfg(c) {
  if (c.d_model % c.heads)
    throw std::invalid_argument("BERT: d_model " + std::to_string(c.d_model) + " is not a multiple of heads " +
                                std::to_string(c.heads));
  embeddings = register_module("embeddings", std::make_shared<Node>("BertEmbeddings"));
  word = add_to(embeddings, "word_embeddings", std::make_shared<Embedding>(c.vocab, c.d_model, g));
  position = add_to(embeddings, "position_embeddings", std::make_shared<Embedding>(c.max_len, c.d_model, g));
  token_type = add_to(embeddings, "token_type_embeddings", std::make_shared<Embedding>(2, c.d_model, g));
  emb_norm = add_to(embeddings, "LayerNorm", std::make_shared<LayerNorm>(c.d_model, 1e-12));
  drop = add_to(embeddings, "dropout", std::make_shared<Dropout>(c.dropout, g));
  encoder = register_module("encoder", std::make_shared<Node>("BertEncoder"));
  layer = add_to(encoder, "layer", std::make_shared<ModuleList<TransformerEncoderLayer>>());
  for (int64_t i = 0; i < c.layers; i++)
    layer->push_back(std::make_shared<TransformerEncoderLayer>(c.d_model, c.heads, c.dim_ff, c.dropout, c.norm_first, g));
  if (c.norm_first) final_norm = add_to(encoder, "LayerNorm", std::make_shared<LayerNorm>(c.d_model));
  pooler = register_module("pooler", std::make_shared<Node>("BertPooler"));
  pool_dense = add_to(pooler, "dense", std::make_shared<Linear>(c.d_model, c.d_model, g));
}

Var BertModel::forward(const BertBatch& b) {
  if (b.T > cfg.max_len)
    throw std::invalid_argument("BERT: a sequence of " + std::to_string(b.T) + " tokens is longer than max_len " +
                                std::to_string(cfg.max_len));
  Tensor pos = Tensor::empty({1, b.T}, DType::i64);
  for (int64_t t = 0; t < b.T; t++) pos.data<int64_t>()[t] = t;
  Var x = word->forward(b.ids) + position->forward(pos) + token_type->forward(b.types);  // (B, T, C)
  x = drop->forward(emb_norm->forward(x));
  for (auto& l : layer->items()) x = l->forward(x, b.mask);
  return cfg.norm_first ? final_norm->forward(x) : x;
}

Var BertModel::pooled(const Var& hidden) { return tanh(pool_dense->forward(select(hidden, 1, 0))); }  // (B, C)

BertForPreTraining::BertForPreTraining(const BertConfig& c, Generator& g) {
  bert = register_module("bert", std::make_shared<BertModel>(c, g));
  cls = register_module("cls", std::make_shared<Node>("BertPreTrainingHeads"));
  predictions = add_to(cls, "predictions", std::make_shared<Node>("BertLMPredictionHead"));
  transform = add_to(predictions, "transform", std::make_shared<Node>("BertPredictionHeadTransform"));
  transform_dense = add_to(transform, "dense", std::make_shared<Linear>(c.d_model, c.d_model, g));
  transform_norm = add_to(transform, "LayerNorm", std::make_shared<LayerNorm>(c.d_model, 1e-12));
  mlm_bias = static_cast<Node&>(*predictions).param("bias", zeros({c.vocab}));
  seq_relationship = add_to(cls, "seq_relationship", std::make_shared<Linear>(c.d_model, 2, g));
  bert_init(*this, *bert, g);
}

Var BertForPreTraining::mlm_logits(const Var& hidden, const Tensor& at) {
  const int64_t C = hidden.size(-1);
  Var h = index_select(reshape(hidden, {-1, C}), 0, at);             // (M, C)
  h = transform_norm->forward(gelu(transform_dense->forward(h)));    // (M, C)
  return matmul(h, transpose(bert->word->weight, 0, 1)) + mlm_bias;  // (M, V), decoder tied
}

Var BertForPreTraining::nsp_logits(const Var& hidden) { return seq_relationship->forward(bert->pooled(hidden)); }

BertClassifier::BertClassifier(const BertConfig& c, int64_t classes, Generator& g) {
  bert = register_module("bert", std::make_shared<BertModel>(c, g));
  drop = register_module("dropout", std::make_shared<Dropout>(0.1, g));
  classifier = register_module("classifier", std::make_shared<Linear>(c.d_model, classes, g));
  bert_init(*this, *bert, g);
}

Var BertClassifier::forward(const BertBatch& b) { return classifier->forward(drop->forward(bert->pooled(bert->forward(b)))); }

}  // namespace dl::nn
