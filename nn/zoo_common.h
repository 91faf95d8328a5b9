// nn/zoo_common.h - small helpers shared by the sequence-model zoo (S4, S4D, DLR, LSTM, convolutions):
// input validation with messages that name the layer, config-field checks, and padding masks.
#pragma once
#include <string>
#include <vector>

#include "nn/registry.h"

namespace dl::nn {

// x must be (B, L, H); otherwise "layer <name>: input has F channels, expected H (input shape [..])".
void check_sequence_input(const std::string& layer, const Var& x, int64_t H);
// Zero the padded positions (mask (B, L), 1 = real) so a convolution cannot carry them into real ones.
// Returns x unchanged when mask is undefined.
Var apply_mask(const Var& x, const Tensor& mask);
// Every key of cfg must be in `known`; otherwise "layer <name>: unknown config field 'k' (known: ...)".
void check_config_keys(const LayerConfig& cfg, const std::string& layer, const std::vector<std::string>& known);
// "layer <name>: config field '<field>' <what>, found <value>"
[[noreturn]] void config_error(const std::string& layer, const std::string& field, const std::string& what,
                               const std::string& found);
// A copy of every parameter in float64 (for finite differences and two-algorithm tests).
void to_double(Module& m);

}  // namespace dl::nn
