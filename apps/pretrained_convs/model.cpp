// apps/pretrained_convs/model.cpp - see model.h.
#include "model.h"

#include <cmath>
#include <map>
#include <mutex>

#include "apps/common/batch_tensors.h"
#include "apps/common/config.h"  // checked_config_in_metadata
#include "tensor/safetensors.h"
#include "tasks/objectives.h"
#include "tasks/tokenizer.h"

namespace pconv {

using namespace dl;
namespace harness = dl::harness;

static int64_t count_params(const nn::Seq2SeqConfig& s) {
  static std::mutex mu;
  static std::map<std::string, int64_t> cache;
  auto list = [](const std::vector<int64_t>& v) {
    std::string out;
    for (int64_t x : v) out += std::to_string(x) + ",";
    return out;
  };
  const std::string key = s.mixer + "|" + std::to_string(s.d_model) + "|" + std::to_string(s.d_ff) + "|" +
                          std::to_string(s.num_layers) + "|" + std::to_string(s.num_decoder_layers) + "|" +
                          std::to_string(s.num_heads) + "|" + list(s.kernel_sizes) + "|" + list(s.dilations) + "|" +
                          std::to_string(s.pair_attention) + "|" + std::to_string(s.vocab_size);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  Generator g(0);
  return cache[key] = nn::Seq2SeqModel(s, g).num_parameters();
}

ModelPlan plan_model(const CellConfig& c) {
  ModelPlan p;
  p.transformer_params = count_params(seq2seq_config(c, "transformer", false));
  nn::Seq2SeqConfig base = seq2seq_config(c, c.mixer(), false);
  if (c.match_params && c.mixer() != "transformer") {
    const int64_t b = 2 * c.d_model * (c.layers + c.decoder_layers);
    nn::Seq2SeqConfig one = base;
    one.d_ff = 1;
    const int64_t a = count_params(one) - b;
    base.d_ff = std::max<int64_t>(1, std::llround((double)(p.transformer_params - a) / b));
  }
  p.cfg = base;
  p.cfg.pair_attention = c.pair_attention();
  p.params = count_params(p.cfg);
  return p;
}

harness::BatchLimits batch_limits(const nn::Seq2SeqConfig& m, const tasks::Dataset& d) {
  harness::BatchLimits l;
  l.vocab = (int32_t)m.vocab_size, l.split = d.name;
  return l;
}

Seq2SeqBatch to_batch(const tasks::Batch& b, bool pair) {
  const int64_t B = b.batch_size, S = b.seq_len, T = b.seq_len2;
  const harness::BatchTensors in = harness::to_tensors(b);
  Seq2SeqBatch o;
  o.ids = in.tokens, o.mask = in.mask, o.labels = Tensor::empty({B, T}, DType::i64);
  for (int64_t i = 0; i < B * T; i++) o.labels.data<int64_t>()[i] = b.mask2[i] ? b.tokens2[i] : tasks::kIgnoreIndex;
  if (pair) {
    o.segments = zeros({B, S}, DType::i64);
    for (int64_t r = 0; r < B; r++) {
      int64_t seg = 0;
      for (int64_t s = 0; s < S; s++) {
        if (b.tokens[r * S + s] == kSeparator) seg = 1;
        o.segments.data<int64_t>()[r * S + s] = seg;
      }
    }
  }
  return o;
}

CellModel load_cell_model(const std::string& model_file) {
  const TensorFile f = load_safetensors(model_file);
  CellModel cm;
  cm.config = harness::checked_config_in_metadata<CellConfig>(f.metadata, model_file, "pretrained_convs");
  Generator g(0);
  cm.model = std::make_unique<nn::Seq2SeqModel>(plan_model(cm.config).cfg, g);
  cm.model->load(model_file);
  return cm;
}

std::vector<std::string> greedy_texts(nn::Seq2SeqModel& m, const tasks::Batch& b, const Seq2SeqTask& t) {
  const Seq2SeqBatch x = to_batch(b, t.pair);
  const Tensor out = m.greedy(x.ids, x.mask, t.max_target, tasks::special_ids::eos, x.segments);
  const int64_t n = out.size(1);
  std::vector<std::string> texts;
  for (int64_t r = 0; r < b.batch_size; r++) {
    std::vector<int32_t> ids(n);
    for (int64_t s = 0; s < n; s++) ids[s] = (int32_t)out.data<int64_t>()[r * n + s];
    texts.push_back(decode_bytes(ids));
  }
  return texts;
}

DecodeCount decode_and_count(nn::Seq2SeqModel& m, const tasks::Batch& b, const Seq2SeqTask& t) {
  const std::vector<std::string> outputs = greedy_texts(m, b, t);
  DecodeCount c;
  const int64_t T = b.seq_len2;
  for (int64_t r = 0; r < b.batch_size; r++) {
    std::vector<int32_t> target;
    for (int64_t s = 0; s < T; s++)
      if (b.mask2[r * T + s]) target.push_back(b.tokens2[r * T + s]);
    const std::string& got = outputs[r];
    const std::string want = decode_bytes(target);
    if (!t.class_names.empty() && decode_label(got, t.class_names) < 0) c.not_a_label++;
    c.right += got == want;
    c.n++;
  }
  return c;
}

}  // namespace pconv
