// nn/onnx/graph.cpp - see graph.h. The field numbers below are onnx.proto's; each message is written by one function.
#include "nn/onnx/graph.h"

#include <cstring>

#include "nn/onnx/protobuf.h"
#include "tensor/safetensors.h"

namespace dl::nn::onnx {

namespace {
Attr named(const std::string& name, int type) {
  Attr a;
  a.name = name, a.type = type;
  return a;
}
}  // namespace

Attr attr_int(const std::string& name, int64_t v) {
  Attr a = named(name, 2);
  a.i = v;
  return a;
}
Attr attr_float(const std::string& name, float v) {
  Attr a = named(name, 1);
  a.f = v;
  return a;
}
Attr attr_ints(const std::string& name, const std::vector<int64_t>& v) {
  Attr a = named(name, 7);
  a.ints = v;
  return a;
}
Attr attr_str(const std::string& name, const std::string& v) {
  Attr a = named(name, 3);
  a.s = v;
  return a;
}
Attr attr_graph(const std::string& name, const Graph& body) {
  Attr a = named(name, 5);
  a.s = body.graph_proto();
  return a;
}

static std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); i++) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

void Graph::add_input(const std::string& name, ElemType type, const std::vector<int64_t>& dims) {
  inputs_.push_back({name, type, dims});
}

void Graph::add_output(const std::string& name, ElemType type, const std::vector<int64_t>& dims) {
  outputs_.push_back({name, type, dims});
}

const std::string& Graph::add_initializer(const std::string& name, const Tensor& t) {
  std::vector<int64_t> dims(t.shape().begin(), t.shape().end());
  auto it = init_index_.find(name);
  if (it != init_index_.end()) {
    if (inits_[it->second].dims != dims)
      fail("onnx::Graph: initializer '" + name + "' added twice with different shapes: " + dims_str(inits_[it->second].dims) +
           " and " + dims_str(dims));
    return inits_[it->second].name;
  }
  const bool integer = t.dtype() == DType::i64;
  Tensor h = t.to(Device::cpu).to(integer ? DType::i64 : DType::f32).contiguous();
  Init in{name, integer ? ElemType::i64 : ElemType::f32, dims, {}};
  const size_t n = size_t(h.numel()) * (integer ? 8 : 4);
  in.raw.resize(n);
  if (n) std::memcpy(in.raw.data(), integer ? (const void*)h.data<int64_t>() : (const void*)h.data<float>(), n);
  init_index_[name] = inits_.size();
  inits_.push_back(std::move(in));
  return inits_.back().name;
}

std::string Graph::constant(const std::vector<int64_t>& v) {
  return add_initializer(fresh("onnx::const"), from_vector(v, {int64_t(v.size())}));
}

std::string Graph::constant(float v) { return add_initializer(fresh("onnx::const"), from_vector(std::vector<float>{v}, {})); }

std::string Graph::constant(const Tensor& t, const std::string& hint) { return add_initializer(fresh("onnx::" + hint), t); }

void Graph::add_node(const std::string& op, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                     const std::vector<Attr>& attrs) {
  nodes_.push_back({op, inputs, outputs, attrs});
}

std::string Graph::node(const std::string& op, const std::vector<std::string>& inputs, const std::vector<Attr>& attrs) {
  std::string out = fresh(op);
  add_node(op, inputs, {out}, attrs);
  return out;
}

std::string Graph::fresh(const std::string& hint) { return hint + "_" + tag_ + std::to_string(counter_++); }

std::vector<std::string> Graph::initializer_names() const {
  std::vector<std::string> out;
  for (auto& i : inits_) out.push_back(i.name);
  return out;
}

// ---- serialisation: one function per message (onnx.proto field numbers in the comments' order) ----

static ProtoWriter attribute_proto(const Attr& a) {
  ProtoWriter w;
  w.bytes(1, a.name);  // name = 1
  switch (a.type) {
    case 1: w.float32(2, a.f); break;  // f = 2
    case 2: w.int64(3, a.i); break;    // i = 3
    case 3: w.bytes(4, a.s); break;    // s = 4
    case 5: w.bytes(6, a.s); break;    // g = 6 (a GraphProto's bytes)
    case 7: w.ints(8, a.ints); break;  // ints = 8
    default: fail("onnx::Graph: attribute '" + a.name + "' has an unsupported type " + std::to_string(a.type));
  }
  w.int64(20, a.type);  // type = 20
  return w;
}

static ProtoWriter node_proto(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out,
                              const std::vector<Attr>& attrs) {
  ProtoWriter w;
  for (auto& s : in) w.bytes(1, s);                        // input = 1
  for (auto& s : out) w.bytes(2, s);                       // output = 2
  w.bytes(3, out.at(0));                                   // name = 3: the first output's name, unique by construction
  w.bytes(4, op);                                          // op_type = 4
  for (auto& a : attrs) w.message(5, attribute_proto(a));  // attribute = 5
  return w;
}

// TypeProto { tensor_type = 1: Tensor { elem_type = 1, shape = 2: TensorShapeProto { dim = 1: Dimension {
// dim_value = 1 | dim_param = 2 } } } }
static ProtoWriter type_proto(ElemType type, const std::vector<int64_t>& dims) {
  ProtoWriter shape;
  for (int64_t d : dims) {
    ProtoWriter dim;
    if (d == kBatch) dim.bytes(2, "batch");
    else if (d == kPast) dim.bytes(2, "past_length");
    else if (d == kNew) dim.bytes(2, "new_length");
    else if (d == kTotal) dim.bytes(2, "total_length");
    else if (d < 0) fail("onnx: dimension " + std::to_string(d) + " is neither a size nor a symbolic dimension");
    else dim.int64(1, d);
    shape.message(1, dim);
  }
  ProtoWriter tensor;
  tensor.int64(1, int64_t(type));
  tensor.message(2, shape);
  ProtoWriter w;
  w.message(1, tensor);
  return w;
}

static ProtoWriter value_info_proto(const std::string& name, ElemType type, const std::vector<int64_t>& dims) {
  ProtoWriter w;
  w.bytes(1, name);                      // name = 1
  w.message(2, type_proto(type, dims));  // type = 2
  return w;
}

static ProtoWriter tensor_proto(const std::string& name, ElemType type, const std::vector<int64_t>& dims,
                                const std::string& raw) {
  ProtoWriter w;
  w.ints(1, dims);            // dims = 1
  w.int64(2, int64_t(type));  // data_type = 2
  w.bytes(8, name);           // name = 8
  w.bytes(9, raw);            // raw_data = 9
  return w;
}

std::string Graph::graph_proto() const {
  ProtoWriter g;
  for (auto& n : nodes_) g.message(1, node_proto(n.op, n.inputs, n.outputs, n.attrs));  // node = 1
  g.bytes(2, name_);                                                                    // name = 2
  for (auto& i : inits_) g.message(5, tensor_proto(i.name, i.type, i.dims, i.raw));     // initializer = 5
  for (auto& v : inputs_) g.message(11, value_info_proto(v.name, v.type, v.dims));      // input = 11
  for (auto& v : outputs_) g.message(12, value_info_proto(v.name, v.type, v.dims));     // output = 12
  return g.str();
}

std::string Graph::serialize() const {
  ProtoWriter opset;
  opset.bytes(1, "");      // OperatorSetIdProto.domain = 1: the default ONNX domain
  opset.int64(2, kOpset);  // version = 2
  ProtoWriter m;
  m.int64(1, kIrVersion);  // ModelProto.ir_version = 1
  m.bytes(2, "dl");        // producer_name = 2
  m.bytes(7, graph_proto());  // graph = 7
  m.message(8, opset);     // opset_import = 8
  return m.str();
}

void Graph::save(const std::string& path) const { atomic_write_file(path, serialize()); }

}  // namespace dl::nn::onnx
