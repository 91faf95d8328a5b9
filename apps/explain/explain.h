// apps/explain/explain.h - `explain --model-file <cell>/model.safetensors`: a teaching tool that opens a model any
// app of this project wrote (lra_benchmark, fpt, pretrained_convs), runs one input through it and shows what is
// inside, as text and pictures a reader can check:
//
//   1. the module tree with the parameter count of every module and the total (nn/module.h num_parameters)
//   2. the op graph of one forward pass (autograd/variable.h graph_string): every node with the nodes it reads,
//      the parameters with their names and shapes; capped at --graph-lines lines, with a count of each op
//   3. every attention layer: one heat map per head of that input, rows = queries, columns = keys, each row a
//      softmax (sums to 1): where that query position reads from
//   4. every state-space layer: its convolution kernel K[l] for a few channels (the layer's output is y = K * u + D u,
//      so K is its impulse response) and the kernel's frequency response |DFT(K)| (which frequencies of the input the
//      layer passes), with the layer's range of step sizes dt
//   5. every convolution: the taps each output position reads, y[t] = sum_k w[k] x[t + offset_k], one curve per row
//      where the taps are weights (a lightweight layer's softmax kernel per head, a dilated layer's depthwise taps per
//      channel), one heat map per head where they are predicted at every position of this input (a dynamic layer)
//   6. <out>/explain.md: all of the above with the pictures linked and one line on how to read each
// Which modules are attention, convolutions or state space layers, explain does not know: it walks the tree and asks
// every module nn/module.h's capability hooks (record_attention, conv_taps, record_conv_taps, ssm_kernel, answered in
// nn/inspect.h's forms). A new layer that answers them is shown with no change here.
// A seq2seq model (pretrained_convs) runs its encoder on the input and its decoder teacher-forced on a target (the
// example's, or with --text the model's own greedy output), so its decoder's self- and cross-attention are shown too.
//
// Which app wrote a file is read from its metadata (every app's cell stores "dl.config", its CellConfig as JSON,
// whose fields differ per app: subject.h); the model is rebuilt from that config with the app's own code and the
// weights are loaded strictly, so what is shown is exactly the model the app trained.
// What it is not: an evaluator (each app's `eval` measures accuracy) or a trainer.
#pragma once
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace explain {

struct Options {
  int example = 0;             // test example K of the cell's split
  std::string text;            // byte-level models (pretrained_convs): explain this text instead of an example
  std::string out;             // output folder (default: <folder of the model file>/explain)
  int graph_lines = 60;        // op-graph lines printed (0: all)
  int depth = 4;               // module-tree depth printed (the counts always cover the whole tree)
  int kernel_channels = 4;     // SSM channels plotted per layer
  bool plots = true;           // run gnuplot (the .dat and .gp files are always written)
};

struct ModuleCount {
  std::string path, type;  // dotted path ("" for the root), type_name()
  int depth = 0;
  int64_t params = 0, trainable = 0;  // of the module and everything below it
};

// One head's attention map: w[q][k] = the weight query position q puts on key position k (rows sum to 1).
struct HeadMap {
  std::string layer;  // dotted module path, e.g. "blocks.0.mixer"
  int head = 0;
  std::vector<std::vector<double>> w;  // (T, S): the numbers the PNG shows
  std::string png;                     // file name inside the output folder
  bool cross = false;                  // cross-attention: queries are decoder (target) positions, keys the source's
  // averages over the query rows: how far a query reads (sum_k w[q][k] |q - k|), and the weight on position 0
  // (the start) and on the query itself (the diagonal)
  double mean_distance = 0, on_first = 0, on_self = 0;
};

// One SSM layer's kernel: K (Cc, H, L) as the layer itself computes it (its ssm_kernel hook).
struct KernelInfo {
  std::string layer, type;  // path, "S4D" / "S4" / "DLR" / ...
  dl::Tensor K;             // float32 (Cc, H, L)
  std::vector<int> channels;           // the channels plotted
  double dt_min = 0, dt_max = 0;       // over the layer's channels (or modes, for DLR)
  std::string dt_source;               // where dt comes from ("exp(kernel.log_dt)", ...)
  std::string kernel_png, freq_png;    // file names inside the output folder
};

// One convolution layer's taps: rows[r][k] is the weight output position t gives to x[t + offsets[k]].
//   lightweight  rows = heads, softmax(weight) (each row sums to 1)
//   dilated      rows = the plotted channels, the raw depthwise taps (any sign; a bias is added after)
//   dynamic      rows = the positions t of this input, one map per head (each row sums to 1): maps[h][t][k]
struct ConvKernelInfo {
  std::string layer, type;  // dotted path of the conv, "lightweight" / "dilated" / "dynamic"
  int64_t kernel_size = 0, dilation = 1;
  bool causal = false;
  std::vector<int64_t> offsets;                           // K offsets, ascending (negative = the past)
  std::vector<std::string> row_names;                     // "head 0" / "channel 5" (lightweight, dilated)
  std::vector<std::vector<double>> rows;                  // lightweight, dilated
  std::vector<std::vector<std::vector<double>>> maps;     // dynamic: (H, T, K)
  std::vector<double> centre;  // per row (lightweight, dilated) or per head (dynamic, averaged over t): sum_k |w| offset / sum |w|
  std::vector<std::string> pngs;
};

struct Report {
  std::string model_file, app, cell, input, out_dir;
  std::vector<ModuleCount> modules;  // preorder; modules[0] is the root
  int64_t total_params = 0;
  std::string graph;     // graph_string of the output, whole
  int64_t graph_nodes = 0;
  std::vector<HeadMap> heads;
  std::vector<KernelInfo> kernels;
  std::vector<ConvKernelInfo> convs;
  std::string text;      // what was printed
};

// Opens the file, rebuilds the model, runs the input, writes <out>/ (maps, kernels, explain.md) and returns what it
// showed. A file no app of this project wrote is a dl::harness::ConfigError that names the file.
Report explain_model_file(const std::string& model_file, const Options& o);

// |DFT(k)| at the frequencies f = j / L cycles per step, j = 0 .. L/2 (the one-sided spectrum of a real signal).
std::vector<double> frequency_response(const std::vector<double>& k);

}  // namespace explain
