// apps/classify - the smallest app on the harness (apps/common): any registry layer as the mixer of a small encoder,
// trained from scratch on any token-sequence classification task of the task registry. Axes: task x layer.
//   classify run  [--preset tiny] [--tasks listops] [--layers s4d,attention] [--seeds 0,1,2] [--set lr=3e-3] [--resume]
//   classify cell --task listops --layer lstm [--set data_path=<the task's official files, e.g. LRA's listops folder>]
// Model: Embedding -> `layers` x nn::ResidualBlock(the layer; a feed-forward where it wants one) -> LayerNorm ->
// masked mean pool -> Linear. What the app writes: apps/common/results.h; what the harness does: experiment.h.
// This file is the executable; the model and the cell are in classify.cpp (the library app_classify, which tests link).
#include "apps/classify/classify.h"

int main(int argc, char** argv) { return dl::harness::run_main(classify::experiment(), argc, argv); }
