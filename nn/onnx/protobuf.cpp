// nn/onnx/protobuf.cpp - see protobuf.h.
#include "nn/onnx/protobuf.h"

#include <cstring>

namespace dl::nn::onnx {

void ProtoWriter::varint(uint64_t v) {
  while (v >= 0x80) {
    buf_.push_back(char((v & 0x7f) | 0x80));  // low 7 bits, "more" bit set
    v >>= 7;
  }
  buf_.push_back(char(v));
}

void ProtoWriter::key(int field, int wire) { varint((uint64_t(field) << 3) | uint64_t(wire)); }

void ProtoWriter::int64(int field, int64_t v) {
  key(field, 0);
  varint(uint64_t(v));  // two's complement for negatives, as protobuf's int64 (not zigzag: that is sint64)
}

void ProtoWriter::float32(int field, float v) {
  key(field, 5);
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  for (int i = 0; i < 4; i++) buf_.push_back(char((bits >> (8 * i)) & 0xff));  // little-endian
}

void ProtoWriter::bytes(int field, const std::string& v) {
  key(field, 2);
  varint(v.size());
  buf_ += v;
}

void ProtoWriter::message(int field, const ProtoWriter& m) { bytes(field, m.str()); }

void ProtoWriter::ints(int field, const std::vector<int64_t>& values) {
  for (int64_t v : values) int64(field, v);
}

}  // namespace dl::nn::onnx
