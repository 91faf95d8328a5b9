// apps/explain/subject.cpp - see subject.h: one opener per app.
#include "subject.h"

#include <sstream>

#include "apps/common/config.h"
#include "apps/fpt/data.h"
#include "apps/fpt/model.h"
#include "apps/lra_benchmark/data.h"
#include "apps/lra_benchmark/model.h"
#include "apps/pretrained_convs/data.h"
#include "apps/pretrained_convs/model.h"
#include "nn/models/seq2seq.h"
#include "tasks/batching.h"
#include "tasks/tokenizer.h"
#include "tensor/safetensors.h"

namespace explain {

using namespace dl;
using dl::harness::ConfigError;
using json = nlohmann::json;

std::string detect_app(const json& c) {
  if (!c.is_object()) return "";
  if (c.contains("ssm_lr")) return "lra_benchmark";
  if (c.contains("arm")) return "fpt";
  if (c.contains("max_src")) return "pretrained_convs";
  return "";
}

namespace {
void check_example(int k, const tasks::Dataset& d, const std::string& what) {
  if (k < 0 || k >= (int)d.examples.size())
    throw ConfigError("--example " + std::to_string(k) + ": the " + what + " split has " +
                      std::to_string(d.examples.size()) + " examples (0 .. " + std::to_string((int)d.examples.size() - 1) + ")");
}

std::string head_of(const std::vector<int32_t>& ids, size_t n) {
  std::ostringstream s;
  for (size_t i = 0; i < std::min(n, ids.size()); i++) s << (i ? " " : "") << ids[i];
  if (ids.size() > n) s << " ...";
  return s.str();
}

// ---- lra_benchmark ----
Subject open_lra(const std::string& path, const json& j, const Options& o) {
  const lra::CellConfig c = dl::harness::checked_config_from_json<lra::CellConfig>(j, path + " dl.config");
  if (!o.text.empty()) throw ConfigError("--text: " + c.key() + " is not a byte-level model; use --example");
  const tasks::TaskData& data = lra::task_data(c);
  check_example(o.example, data.test, c.task + " test");
  Generator g((uint64_t)c.seed);
  auto m = std::make_shared<lra::LraModel>(c, lra::shape_of(data), c.regime == "spt-causal", g);
  m->load(path);
  m->eval();
  tasks::Batcher bt(data.test, {1, 0, false});
  tasks::Batch b = bt.collate({o.example});
  const tasks::Example& ex = data.test.examples[o.example];
  Subject s;
  // the kernels are shown at the longest length the model was built for (the memory it can have), not just this input's
  s.app = "lra_benchmark", s.cell = c.key(), s.model = m, s.length = std::max<int64_t>(b.seq_len, m->shape.max_len);
  s.real_len = b.lengths[0];
  std::ostringstream in;
  in << "test example " << o.example << " of " << c.task << " (label " << ex.label << ", " << b.lengths[0] << " positions"
     << (ex.tokens.empty() ? "" : ": tokens " + head_of(ex.tokens, 16)) << ")";
  s.input = in.str();
  if (c.task == "listops") {  // tasks/listops.h's fixed vocabulary
    const char* names[] = {"pad", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "[MIN", "[MAX", "[MED", "[SM", "]"};
    for (int32_t id : ex.tokens) s.labels.push_back(id >= 0 && id < 16 ? names[id] : std::to_string(id));
  }
  s.run = [m, b] {
    lra::Inputs a = lra::to_inputs(b), a2;
    if (m->shape.two_tower) a2 = lra::to_inputs(b, true);
    return m->classify(a, m->shape.two_tower ? &a2 : nullptr);  // (1, classes)
  };
  return s;
}

// ---- fpt ----
Subject open_fpt(const std::string& path, const json& j, const Options& o) {
  const fpt::CellConfig c = dl::harness::checked_config_from_json<fpt::CellConfig>(j, path + " dl.config");
  if (!o.text.empty()) throw ConfigError("--text: " + c.key() + " does not read text; use --example");
  const fpt::FptTask& t = fpt::fpt_task(c);
  check_example(o.example, t.data.test, c.task + " test");
  Generator g(0);
  auto m = std::make_shared<fpt::FptModel>(c, t, g);
  m->load(path);
  m->eval();
  m->freeze();  // the arm's frozen parameters (the file does not record them): the tree shows what trained
  tasks::Batcher bt(t.data.test, {1, 0, false});
  fpt::FptBatch b = fpt::to_batch(t, bt.collate({o.example}));
  Subject s;
  s.app = "fpt", s.cell = c.key(), s.model = m;
  s.length = b.mask.size(1);
  s.real_len = (int64_t)sum(b.mask).item();
  s.input = "test example " + std::to_string(o.example) + " of " + c.task + " (" + std::to_string(s.real_len) + " of " +
            std::to_string(s.length) + " positions real)";
  if (t.bits && b.features.size(2) == 1)  // one bit per token
    for (int64_t i = 0; i < s.length; i++) s.labels.push_back(b.features.data<float>()[i] > 0.5f ? "1" : "0");
  s.run = [m, b] { return m->forward(b); };  // (1, readout, outputs)
  return s;
}

// ---- pretrained_convs: the encoder reads the input, the decoder is teacher-forced on a target ----
// ByteTokenizer: byte b is id b + 5; eos 1, separator 3
static std::string byte_label(int64_t id) {
  return id == 0 ? "start" : id == 1 ? "eos" : id == pconv::kSeparator ? "sep" : id >= 5 && id < 261 ? std::string(1, char(id - 5)) : "#" + std::to_string(id);
}

Subject open_pconv(const std::string& path, const json& j, const Options& o) {
  const pconv::CellConfig c = dl::harness::checked_config_from_json<pconv::CellConfig>(j, path + " dl.config");
  const pconv::Seq2SeqTask& t = pconv::seq2seq_task(c);
  Generator g(0);
  auto m = std::make_shared<nn::Seq2SeqModel>(pconv::plan_model(c).cfg, g);
  m->load(path);
  m->eval();
  Tensor ids, mask, segments, labels;  // labels (1, T): the decoder's target
  Subject s;
  if (!o.text.empty()) {
    std::vector<int32_t> e = pconv::encode_text(o.text, c.max_src);
    const int64_t S = (int64_t)e.size();
    ids = Tensor::empty({1, S}, DType::i64), mask = ones({1, S});
    for (int64_t i = 0; i < S; i++) ids.data<int64_t>()[i] = e[i];
    if (t.pair) {
      segments = zeros({1, S}, DType::i64);
      int64_t seg = 0;
      for (int64_t i = 0; i < S; i++) segments.data<int64_t>()[i] = seg = seg || e[i] == pconv::kSeparator;
    }
    labels = m->greedy(ids, mask, t.max_target, tasks::special_ids::eos, segments);  // the model's own answer
    std::vector<int32_t> out;
    for (int64_t i = 0; i < labels.size(1); i++) out.push_back((int32_t)labels.data<int64_t>()[i]);
    s.input = "the text \"" + o.text + "\" (" + std::to_string(S) + " bytes with eos); the decoder is teacher-forced on "
              "the model's greedy output \"" + pconv::decode_bytes(out) + "\"";
  } else {
    check_example(o.example, t.data.test, c.task + " test");
    tasks::Batcher bt(t.data.test, {1, 0, false});
    tasks::Batch b = bt.collate({o.example});
    pconv::Seq2SeqBatch x = pconv::to_batch(b, t.pair);
    ids = x.ids, mask = x.mask, segments = x.segments, labels = x.labels;
    const tasks::Example& ex = t.data.test.examples[o.example];
    std::string text = pconv::decode_bytes(ex.tokens);
    if (text.size() > 80) text = text.substr(0, 80) + "...";
    s.input = "test example " + std::to_string(o.example) + " of " + c.task + ": \"" + text + "\" -> \"" +
              pconv::decode_bytes(ex.tokens2) + "\" (the decoder is teacher-forced on that target)";
  }
  const Tensor dec_in = nn::shift_right(labels);  // (1, T): start, then the target shifted right
  s.app = "pretrained_convs", s.cell = c.key(), s.model = m, s.length = ids.size(1), s.real_len = ids.size(1);
  for (int64_t i = 0; i < s.length; i++) s.labels.push_back(byte_label(ids.data<int64_t>()[i]));
  for (int64_t i = 0; i < dec_in.size(1); i++) s.target_labels.push_back(byte_label(dec_in.data<int64_t>()[i]));
  s.run = [m, ids, mask, segments, dec_in] {
    Var enc = m->encode(ids, mask, segments);    // (1, S, C)
    return m->decode_logits(dec_in, enc, mask);  // (1, T, V)
  };
  s.mark_axes = [](NamedWeights& w) {  // decoder.<i>.attention: target x target; decoder.<i>.cross: target x source
    const bool dec = w.layer.starts_with("decoder.");
    w.target_queries = dec, w.target_keys = dec && w.layer.find(".cross") == std::string::npos;
  };
  return s;
}
}  // namespace

Subject open_subject(const std::string& path, const Options& o) {
  TensorFile f;
  try {
    f = load_safetensors(path);
  } catch (const std::exception& e) {
    throw ConfigError(path + ": not a model file this project's apps write (" + e.what() + ")");
  }
  // The app that wrote it: named in the file ("dl.app", harness::save_cell_model), or for a file from before that
  // told by the config's fields. Which apps explain opens is decided below, so the config is read as that app's.
  const auto named = f.metadata.find("dl.app");
  const json j = dl::harness::config_in_metadata(
      f.metadata, path, named != f.metadata.end() ? named->second : "lra_benchmark, fpt or pretrained_convs");
  const std::string app = named != f.metadata.end() ? named->second : detect_app(j);
  using Opener = Subject (*)(const std::string&, const json&, const Options&);
  const std::pair<const char*, Opener> openers[] = {{"lra_benchmark", open_lra}, {"fpt", open_fpt}, {"pretrained_convs", open_pconv}};
  for (auto& [name, open] : openers)
    if (app == name) return open(path, j, o);
  if (named != f.metadata.end())
    throw ConfigError(path + ": written by " + app + ", whose models explain does not open (it opens lra_benchmark, fpt and "
                      "pretrained_convs models)");
  throw ConfigError(path + ": its dl.config is no config of lra_benchmark (has ssm_lr), fpt (has arm) or "
                    "pretrained_convs (has max_src)");
}

}  // namespace explain
