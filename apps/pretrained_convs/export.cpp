// apps/pretrained_convs/export.cpp - see export.h.
#include "apps/common/phase.h"
#include "export.h"

#include <filesystem>
#include <iostream>

#include "config.h"
#include "data.h"
#include "model.h"
#include "nn/onnx/check_file.h"
#include "nn/onnx/graph.h"
#include "tasks/tokenizer.h"
#include "tensor/safetensors.h"

namespace pconv {

using namespace dl;
namespace ox = dl::nn::onnx;
namespace harness = dl::harness;

// An example batch of B rows as the app's batches look: byte ids right-padded with 0 after the mask's real
// length, eos last; pair rows with a separator somewhere in their real part and the segments to_batch makes;
// labels of random lengths in [1, T], the decoder's input shift_right of them.
static constexpr int64_t kFirstByte = tasks::ByteTokenizer::byte_offset;  // byte b is id b + 5

struct Example {
  Tensor ids, mask, segments, dec_in;
};

static Example make_example(int64_t B, int64_t S, int64_t T, bool pair, Generator& gen) {
  Example e;
  e.mask = ox::example_padding_mask(B, S, gen);
  e.ids = randint(kFirstByte, kFirstByte + 256, {B, S}, gen);
  int64_t* id = e.ids.data<int64_t>();
  const float* mk = e.mask.data<float>();
  if (pair) e.segments = zeros({B, S}, DType::i64);
  for (int64_t b = 0; b < B; b++) {
    int64_t real = 0;
    while (real < S && mk[b * S + real] != 0) real++;
    for (int64_t s = real; s < S; s++) id[b * S + s] = tasks::special_ids::pad;
    if (real > 0) id[b * S + real - 1] = tasks::special_ids::eos;
    if (!pair) continue;
    const int64_t sep = real > 2 ? 1 + int64_t(gen.next_u64() % uint64_t(real - 2)) : 0;  // in [1, real - 2]
    id[b * S + sep] = kSeparator;
    for (int64_t s = sep; s < S; s++) e.segments.data<int64_t>()[b * S + s] = 1;
  }
  Tensor labels = randint(kFirstByte, kFirstByte + 256, {B, T}, gen);
  for (int64_t b = 0; b < B; b++) {
    const int64_t n = 1 + int64_t(gen.next_u64() % uint64_t(T));  // in [1, T]
    labels.data<int64_t>()[b * T + n - 1] = tasks::special_ids::eos;
    for (int64_t t = n; t < T; t++) labels.data<int64_t>()[b * T + t] = -100;
  }
  e.dec_in = nn::shift_right(labels);
  return e;
}

void export_onnx(nn::Seq2SeqModel& m, const std::string& onnx_path, int64_t S, int64_t T, int64_t batch, uint64_t seed) {
  if (batch < 1) throw ConfigError("pretrained_convs export: --batch must be at least 1, found " + std::to_string(batch));
  m.eval();
  ox::Graph g("pretrained_convs_" + m.cfg.mixer + (m.cfg.pair_attention ? "_xattn" : ""));
  m.export_onnx(g, S, T);
  g.save(onnx_path);

  Generator gen(seed);
  const Example e = make_example(batch, S, T, m.cfg.pair_attention, gen);
  NoGradGuard ng;
  Var logits = m.decode_logits(e.dec_in, m.encode(e.ids, e.mask, e.segments), e.mask);  // (B, T, V)
  std::map<std::string, Tensor> inputs = {{"input_ids", e.ids}, {"attention_mask", e.mask}, {"decoder_input_ids", e.dec_in}};
  if (m.cfg.pair_attention) inputs["segments"] = e.segments;
  ox::write_check_file(onnx_path, inputs, {{"logits", logits.data()}});
}

std::string export_cell(const std::string& path, const harness::ExportOptions& o) {
  const CellModel cm = load_cell_model(path);
  const CellConfig& c = cm.config;
  nn::Seq2SeqModel& m = *cm.model;
  const int64_t S = c.max_src, T = seq2seq_task(c).max_target;
  export_onnx(m, o.onnx, S, T, o.batch, o.seed);
  return c.key() + ": wrote " + o.onnx + " and " + ox::check_file_path(o.onnx) + " (source length " + std::to_string(S) +
         ", target length " + std::to_string(T) + ", dynamic batch)";
}

}  // namespace pconv
