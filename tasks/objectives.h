// tasks/objectives.h - self-supervised pretraining objectives computed on a task's own data.
//
// What it is: pure functions that turn one unlabelled sequence into an (inputs, targets) pair for
// pretraining, following "Never Train from Scratch" (Amos et al. 2023): the model is first trained on
// the downstream task's own inputs with a causal LM, masked denoising or T5 span-corruption loss, then
// fine-tuned on the labels. Every function takes the random generator explicitly, so the same rng state
// gives the same corruption.
// What it is not: a loss (the trainer applies cross-entropy / L1), a batcher (batching.h) or a tokenizer.
//
// Id conventions (one place, so every caller agrees):
//   kIgnoreIndex = -100     target id that the cross-entropy must skip (PyTorch's default ignore_index).
//   pad_id                  the task's padding id (Dataset::pad_id); pad targets are always kIgnoreIndex and
//                           pads are never masked or corrupted.
//   mask_id                 the id a masked token is replaced by; the caller reserves it in the vocabulary
//                           (usually vocab_size, making the model's vocabulary vocab_size + 1).
//   sentinel_top_id         T5's extra_ids: the k-th corrupted span (k = 0, 1, ...) is replaced by the id
//                           sentinel_top_id - k (T5 uses vocab_size - 1 - k). The caller reserves ids
//                           [sentinel_top_id - max_spans + 1, sentinel_top_id].
//   eos_id                  end-of-sequence id appended to span-corruption targets (and inputs, see below).
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "tasks/dataset.h"  // DataError

namespace dl::tasks {

inline constexpr int32_t kIgnoreIndex = -100;

// A token-level (inputs, targets) pair. For causal LM and masked denoising inputs.size() == targets.size().
struct TokenObjective {
  std::vector<int32_t> inputs;
  std::vector<int32_t> targets;
};

// Causal language modelling: inputs = x[0..T-2], targets = x[1..T-1]; a target that is pad_id becomes
// kIgnoreIndex so padding never contributes to the loss. Needs T >= 2 (throws DataError otherwise).
TokenObjective causal_lm(const std::vector<int32_t>& x, int32_t pad_id);

// Masked denoising for tokens (BERT-style without the 80/10/10 split, as in Amos et al. 2023): each
// non-pad position is masked independently with probability p; masked inputs become mask_id, targets hold
// the original token at masked positions and kIgnoreIndex everywhere else.
TokenObjective mask_tokens(const std::vector<int32_t>& x, double p, int32_t mask_id, int32_t pad_id, std::mt19937_64& rng);

// Masked denoising for continuous inputs of shape (T, F). Each position t is masked with probability p
// (all F features together). The model input gets one extra channel holding the mask, so it is (T, F+1):
//   inputs[t] = [x[t] * (1 - m_t), m_t]
// targets = x (T, F) and loss_mask = m (T); the trainer applies L1 on masked positions only.
struct FeatureObjective {
  std::vector<float> inputs;     // (T, F+1) row-major
  std::vector<float> targets;    // (T, F)
  std::vector<float> loss_mask;  // (T), 1 where masked
  int32_t feature_dim = 0;       // F + 1, the width of `inputs`
};
FeatureObjective mask_features(const std::vector<float>& x, int32_t feature_dim, double p, std::mt19937_64& rng);

// T5's random_spans_noise_mask (Raffel et al. 2020, t5/data/preprocessors.py): a boolean mask of `length`
// with round(length * density) noise positions grouped into round(noise / mean_span_length) spans. Noise
// and non-noise lengths are random segmentations (every segment >= 1) interleaved as
// [keep_0, noise_0, keep_1, noise_1, ...], so the sequence always starts with kept tokens and ends with
// noise. Deviation: T5 can be asked for more spans than there are kept tokens; we clamp the span count so
// every kept segment is non-empty. Rounding is half-to-even like tf.round.
std::vector<uint8_t> random_spans_noise_mask(int64_t length, double density, double mean_span_length, std::mt19937_64& rng);

struct SpanCorruptionConfig {
  double noise_density = 0.15;
  double mean_span_length = 3.0;
  int32_t sentinel_top_id = 0;  // first span's sentinel; later spans count down from it
  int32_t eos_id = 1;
  bool eos_on_inputs = true;  // T5 appends EOS to inputs as well as to targets
};

// T5 span corruption. With noise spans N_k between kept spans K_k:
//   inputs  = K_0 S_0 K_1 S_1 ... K_{n-1} S_{n-1} [eos]      (S_k = sentinel_top_id - k)
//   targets = S_0 N_0 S_1 N_1 ... S_{n-1} N_{n-1} eos
// x must not contain padding (strip it first); needs x.size() >= 2.
TokenObjective span_corruption(const std::vector<int32_t>& x, const SpanCorruptionConfig& config, std::mt19937_64& rng);

// Inverse of span_corruption given both halves (used by tests and for debugging a pipeline): rebuilds the
// original sequence by substituting each sentinel in `inputs` with the tokens after it in `targets`.
std::vector<int32_t> span_corruption_reconstruct(const TokenObjective& corrupted, const SpanCorruptionConfig& config);

}  // namespace dl::tasks
