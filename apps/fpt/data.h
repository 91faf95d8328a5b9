// apps/fpt/data.h - the FPT tasks as the model sees them (universal-computation's datasets, tasks/ generators).
//
//   bit_xor        two strings of n bits (0/1; default n 5), `patch` bits per token (default 1: 10 tokens of 1);
//                  the target is their XOR, read from the last n/patch tokens, 2 logits per bit
//   bit_memory     5 patterns of n bits (+-1; default n 1000) and a copy of one with each bit zeroed with p 0.5;
//                  `patch` bits per token (default 50: 120 tokens of 50); the target is the unmasked pattern,
//                  read from the last n/patch tokens (the query's), 2 logits per bit
//   listops        the LRA generator's expressions as tokens (default length <= 512, as FPT), 10 classes,
//                  read from the last position (padding for short sequences, as the paper; masked_readout: the
//                  last real token)
//   image_patches  Fashion-MNIST as 49 patches of 4x4 pixels (the stand-in for FPT's MNIST: Debian packages
//                  Fashion-MNIST, not MNIST), 10 classes, read from the last token
//   digits         the 8x8 handwritten digits of python3-sklearn (tasks/digits.h) as 16 patches of 2x2 pixels
//                  (`patch` 1, 2, 4 or 8), a fixed split of the 1797 images (1259 / 179 / 359; sizes cap each
//                  split), 10 classes, read from the last token
//   homology       the stand-in for TAPE remote homology (tasks/homology.h): which of 9 Pfam families (the profile
//                  HMMs of hmmer-examples, or `data_path`; `families` picks some) a window of `seq_len` residues
//                  (default 64) was sampled from; 20 amino-acid tokens; family recognition, not fold classification
// Bit accuracy is per bit (the paper's sign agreement), classification accuracy per example; both on the
// whole split.
#pragma once
#include <string>

#include "apps/common/comm.h"
#include "config.h"
#include "tasks/batching.h"
#include "tasks/dataset.h"
#include "tensor/tensor.h"

namespace fpt {

struct FptTask {
  dl::tasks::TaskData data;
  int64_t vocab = 0;     // token tasks: the vocabulary (0 for continuous inputs)
  int64_t features = 0;  // continuous tasks: inputs per token after patching
  int64_t readout = 1;   // tokens read out at the end of the sequence
  int64_t outputs = 0;   // logits per readout token: classes, or 2 per bit of the token
  int64_t max_len = 0;   // the longest input (the positions a model needs)
  bool bits = false;     // per-bit two-way classification
  int64_t patch = 1;     // bit tasks: bits per token
};

// The task's splits for a config, made once per process and shared by the cells of a sweep.
const FptTask& fpt_task(const CellConfig& c);

struct FptBatch {
  dl::Tensor tokens;    // (B, T) i64, or undefined
  dl::Tensor features;  // (B, T, features) f32, or undefined
  dl::Tensor mask;      // (B, T) f32, 1 = real position
  dl::Tensor targets;   // (B) i64 labels, or (B, bits) i64 bit classes
};
FptBatch to_batch(const FptTask& t, const dl::tasks::Batch& b);

}  // namespace fpt
