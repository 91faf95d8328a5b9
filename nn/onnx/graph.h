// nn/onnx/graph.h - an ONNX graph under construction, and its file: a ModelProto in opset 17, IR version 8 (what
// Debian's python3-onnx 1.12 knows), written with our own protobuf writer (protobuf.h).
//
// A graph is a list of nodes (op type, input value names, output value names, attributes) over named values: the
// graph's inputs, its initializers (the weights, stored in the file) and the nodes' outputs. Layers add their part
// through SequenceLayer::export_onnx (nn/sequence_layer.h) and the helpers of nn/onnx/ops.h; docs/onnx.md says which
// layers export and how.
//   initializers  named as in the model's state_dict ("blocks.0.mixer.in_proj_weight"), so the file maps back to the
//                 checkpoint; tensors that are not in the state_dict (shapes, constants, an SSM's convolution kernel
//                 computed at export time) are named "onnx::..." so nobody mistakes them for weights
//   dimensions    fixed, except the batch: kBatch in a dims list is the symbolic dimension "batch"; a cached
//                 decoding step (GPT2Model::export_onnx_with_past) also has kPast, kNew and kTotal, its positions
//                 already cached, given now, and both
// Field numbers are those of onnx/onnx.proto (github.com/onnx/onnx). What it is not: a reader, an optimiser, or a
// checker of the graph (ONNX's checker and ONNX Runtime check the files: tests/onnx).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace dl::nn::onnx {

inline constexpr int kOpset = 17;
inline constexpr int64_t kIrVersion = 8;
inline constexpr int64_t kBatch = -1;  // in a dims list: the dynamic "batch" dimension
inline constexpr int64_t kPast = -2, kNew = -3, kTotal = -4;  // "past_length", "new_length", "total_length"

enum class ElemType : int { f32 = 1, i64 = 7, boolean = 9 };  // onnx.proto TensorProto.DataType

// One AttributeProto; make them with attr_int / attr_float / attr_ints / attr_str / attr_graph.
struct Attr {
  std::string name;
  int type = 0;  // onnx.proto AttributeProto.AttributeType: FLOAT 1, INT 2, STRING 3, GRAPH 5, INTS 7
  float f = 0;
  int64_t i = 0;
  std::vector<int64_t> ints;
  std::string s;  // a STRING's bytes, or a GRAPH's serialized GraphProto
};
Attr attr_int(const std::string& name, int64_t v);
Attr attr_float(const std::string& name, float v);
Attr attr_ints(const std::string& name, const std::vector<int64_t>& v);
Attr attr_str(const std::string& name, const std::string& v);
class Graph;
Attr attr_graph(const std::string& name, const Graph& body);  // a Scan's or Loop's body

// A sequence flowing through an exported model: the value x (batch, length, channels) float, and the padding mask
// (batch, length) float, 1 = real position, or "" when every position is real.
struct Sequence {
  std::string x, mask;
  int64_t length = 0, channels = 0;
};

class Graph {
 public:
  explicit Graph(std::string name) : name_(std::move(name)) {}
  // A body graph (attr_graph) inside this one: its own inputs, outputs, nodes and initializers, and fresh names tagged
  // with `tag` so that none repeats a name of the graph around it (ONNX keeps one namespace across the nesting).
  Graph body(const std::string& name, const std::string& tag) const {
    Graph b(name);
    b.tag_ = tag_ + tag;
    return b;
  }

  void add_input(const std::string& name, ElemType type, const std::vector<int64_t>& dims);
  void add_output(const std::string& name, ElemType type, const std::vector<int64_t>& dims);
  // A weight under its state_dict name, as float32 (floating tensors) or int64, from either device. The same name
  // again with the same shape returns it (an encoder used twice); another shape throws naming both.
  const std::string& add_initializer(const std::string& name, const Tensor& t);
  // Tensors that are not weights: int64 vectors (shapes, axes), float scalars, derived float tensors.
  std::string constant(const std::vector<int64_t>& v);
  std::string constant(float v);
  std::string constant(const Tensor& t, const std::string& hint);  // "onnx::<hint>", made unique
  // A node; node() is the one-output form and returns its output's fresh name.
  void add_node(const std::string& op, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                const std::vector<Attr>& attrs = {});
  std::string node(const std::string& op, const std::vector<std::string>& inputs, const std::vector<Attr>& attrs = {});
  std::string fresh(const std::string& hint);  // a value name not used before: "<hint>_<n>"

  std::string serialize() const;             // the ModelProto's bytes
  std::string graph_proto() const;           // the GraphProto's bytes (what a ModelProto or a GRAPH attribute holds)
  void save(const std::string& path) const;  // atomic (temp file + rename)
  std::vector<std::string> initializer_names() const;
  size_t num_nodes() const { return nodes_.size(); }

 private:
  struct Value {
    std::string name;
    ElemType type;
    std::vector<int64_t> dims;
  };
  struct Init {
    std::string name;
    ElemType type;
    std::vector<int64_t> dims;
    std::string raw;  // little-endian data (TensorProto.raw_data)
  };
  struct Node {
    std::string op;
    std::vector<std::string> inputs, outputs;
    std::vector<Attr> attrs;
  };
  std::string name_;
  std::vector<Value> inputs_, outputs_;
  std::vector<Init> inits_;
  std::map<std::string, size_t> init_index_;
  std::vector<Node> nodes_;
  int64_t counter_ = 0;
  std::string tag_;  // in every fresh name (a body graph's)
};

}  // namespace dl::nn::onnx
