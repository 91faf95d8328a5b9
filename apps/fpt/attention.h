// apps/fpt/attention.h - `fpt attention --cell DIR`: the frozen transformer's attention on one test example of a
// finished cell, as PNG heat maps (one per layer, averaged over heads; rows = queries, columns = keys), as the paper
// shows for bit XOR: the output tokens attend to the input bits they combine. Writes <cell>/attention/layer<k>.
#pragma once
#include <string>

namespace fpt {

void write_attention_maps(const std::string& cell_dir, int example);

}  // namespace fpt
