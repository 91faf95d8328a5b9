// apps/lra_benchmark/predict.h - `lra_benchmark predict --cell DIR (--text INPUT.. | --file FILE)`: a finished cell's
// predictions for inputs of your own, a line each: the class (its name where the task has names), its probability and
// the input's first characters; for a regression task the value in the target's units.
//
// Inputs are encoded as the cell's task encodes its examples: a ListOps expression by tasks/listops.h's tokenizer (the
// official files' form, parentheses allowed: "[MAX 2 9 [MIN 4 7 ] 0 ]"), a byte task's text (text, retrieval,
// brown_genre, spam_assassin, wordnet_supersense) as byte tokens, a retrieval pair as its two texts separated by one
// tab. Each is checked before the model reads it: a token ListOps does not know, a pair without its tab, an input
// longer than the longest sequence of the cell's task (the model's position table) are errors naming the input
// (`--text` number or file and line). The pixel tasks (image, image14, cifar10, pathfinder, pathx) take `--image FILE`:
// a Netpbm image (P5 or P2 gray, P6 colour made gray by LRA's CIFAR rule; `convert x.png x.pgm` makes one) of the
// task's side, or of a multiple of it, average-pooled as the task pools (a 28 x 28 Fashion-MNIST picture for image14).
// Tasks whose inputs are signals (speech, bidmc, the FPT tasks) are refused with that reason: `eval` runs a cell on its
// task's own splits.
#pragma once
#include <string>
#include <vector>

#include "config.h"

namespace lra {

struct Prediction {
  int label = -1;    // a classification task's class
  std::string name;  // its name (the class number where the task names none)
  double prob = 0;   // the softmax's probability of that class
  double value = 0;  // a regression task's prediction, in the target's units
};

// The model saved at model_path (a cell's model.safetensors, whose config is c) on `inputs`; where[i] names input i in
// errors. One prediction per input, in order.
std::vector<Prediction> predict_inputs(const CellConfig& c, const std::string& model_path, const std::vector<std::string>& inputs,
                                       const std::vector<std::string>& where);

// The same for image files (PGM or PPM) of a pixel task.
std::vector<Prediction> predict_images(const CellConfig& c, const std::string& model_path, const std::vector<std::string>& files);

// The command: --text inputs (repeatable) and --file's lines, or --image files, printed one line each.
void predict_cell(const std::string& cell_path, const std::vector<std::string>& texts, const std::string& file,
                  const std::vector<std::string>& images);

}  // namespace lra
