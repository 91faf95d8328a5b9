// tests/onnx/test_protobuf.cpp - the protobuf writer's bytes against bytes computed by hand from the wire format
// (https://protobuf.dev/programming-guides/encoding/), and the smallest ONNX model the graph writes.
#include <gtest/gtest.h>

#include "nn/onnx/graph.h"
#include "nn/onnx/protobuf.h"

using dl::nn::onnx::Graph;
using dl::nn::onnx::ProtoWriter;

static std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) out += std::string{d[c >> 4], d[c & 15], ' '};
  return out;
}

TEST(OnnxProtobuf, VarintFieldIsKeyThenSevenBitGroups) {
  ProtoWriter w;
  w.int64(1, 150);  // key 1 << 3 | 0 = 0x08; 150 = 0b1_0010110 -> 0x96 0x01
  EXPECT_EQ(hex(w.str()), "08 96 01 ");
}

TEST(OnnxProtobuf, NegativeInt64IsTenBytesOfTwosComplement) {
  ProtoWriter w;
  w.int64(3, -1);  // key 0x18; 2^64 - 1 in 7-bit groups: nine 0xff then 0x01
  EXPECT_EQ(hex(w.str()), "18 ff ff ff ff ff ff ff ff ff 01 ");
}

TEST(OnnxProtobuf, LengthDelimitedFloatAndRepeated) {
  ProtoWriter w;
  w.bytes(2, "abc");    // key 0x12, length 3
  w.float32(2, 1.0f);   // key 2 << 3 | 5 = 0x15; 1.0f = 0x3f800000 little-endian
  w.ints(1, {2, 300});  // one key per element: 08 02, 08 ac 02
  EXPECT_EQ(hex(w.str()), "12 03 61 62 63 15 00 00 80 3f 08 02 08 ac 02 ");
}

TEST(OnnxProtobuf, NestedMessageIsItsBytesWithALength) {
  ProtoWriter opset;  // OperatorSetIdProto { domain = 1: "", version = 2: 17 }
  opset.bytes(1, "");
  opset.int64(2, 17);
  ProtoWriter m;
  m.message(8, opset);  // ModelProto.opset_import = 8: key 0x42, length 4
  EXPECT_EQ(hex(m.str()), "42 04 0a 00 10 11 ");
}

TEST(OnnxProtobuf, EmptyGraphModelBytes) {
  // ModelProto { ir_version = 1: 8, producer_name = 2: "dl", graph = 7: GraphProto { name = 2: "g" },
  //              opset_import = 8: { domain "", version 17 } }
  EXPECT_EQ(hex(Graph("g").serialize()), "08 08 12 02 64 6c 3a 03 12 01 67 42 04 0a 00 10 11 ");
}
