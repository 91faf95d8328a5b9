// nn/onnx/protobuf.h - a minimal protocol-buffers wire-format writer: just what an ONNX file needs.
//
// A protobuf message is a sequence of fields; each field is a key then a value:
//   key    = varint(field_number << 3 | wire_type)
//   wire 0 (varint)            int64, int32, enum, bool: 7 bits per byte, low bits first, high bit = "more bytes";
//                              a negative int64 is its 64-bit two's complement (10 bytes)
//   wire 2 (length-delimited)  string, bytes, a nested message: varint(byte count) then the bytes
//   wire 5 (32-bit)            float: 4 bytes little-endian
// Repeated scalars are written one key per element (proto2's unpacked form, which onnx.proto's proto2 schema
// uses and every reader accepts). Fields are written in the order the caller writes them.
// What it is not: a reader, or a general protobuf library (no groups, no 64-bit fixed fields, no maps).
// Reference: https://protobuf.dev/programming-guides/encoding/
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dl::nn::onnx {

class ProtoWriter {
 public:
  void int64(int field, int64_t v);                          // wire 0
  void float32(int field, float v);                          // wire 5
  void bytes(int field, const std::string& v);               // wire 2 (also UTF-8 strings)
  void message(int field, const ProtoWriter& m);             // wire 2: a nested message's bytes
  void ints(int field, const std::vector<int64_t>& values);  // repeated int64, one key each
  const std::string& str() const { return buf_; }

 private:
  void key(int field, int wire);
  void varint(uint64_t v);
  std::string buf_;
};

}  // namespace dl::nn::onnx
