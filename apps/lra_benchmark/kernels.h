// apps/lra_benchmark/kernels.h - the learned convolution kernels of the first block's mixer, as in Amos et al.'s
// Figure 4 (for any layer that exposes one: SequenceLayer::learned_kernel, i.e. S4, S4D, its minimal twin, DLR).
#pragma once
#include <string>
#include <vector>

#include "model.h"

namespace lra {

// The first block's kernel summarised as in the paper's Figure 4: for each lag l < L, the largest |K[c, l]| over
// channels c and both directions. Empty for models without a learned kernel (Transformer, ...).
std::vector<float> kernel_envelope(LraModel& m, int64_t L);

struct KernelHistory {
  std::vector<float> init, pretrained;  // kernel_envelope before training and after self-pretraining (may be empty)
};

// Lags < min(L, 512): <cell>/kernels.dat holds the kernel's first 4 channels, <cell>/kernels_max.dat its envelope
// at initialisation, after pretraining and now (the columns hist has), kernels.png plots both when gnuplot is
// present. Nothing for models without a learned kernel.
void write_learned_kernels(LraModel& m, const std::string& cdir, int64_t L, const KernelHistory& hist = {});

}  // namespace lra
