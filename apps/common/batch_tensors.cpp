// apps/common/batch_tensors.cpp - Batch -> tensors (see batch_tensors.h).
#include "apps/common/batch_tensors.h"

#include <string>
#include <vector>

#include "tasks/dataset.h"

namespace dl::harness {

namespace {

// `src` copied element by element into a new (shape) tensor of `dtype` (i64 or f32); undefined when src is empty.
template <class T> Tensor copy_of(const std::vector<T>& src, const Shape& shape, DType dtype, const char* field) {
  if (src.empty()) return Tensor();
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  if ((int64_t)src.size() != n)
    throw tasks::DataError(std::string("to_tensors: batch field ") + field + " holds " + std::to_string(src.size()) +
                           " values, its shape needs " + std::to_string(n));
  Tensor t = Tensor::empty(shape, dtype);
  if (dtype == DType::i64) {
    int64_t* o = t.data<int64_t>();
    for (int64_t i = 0; i < n; i++) o[i] = src[i];
  } else {
    float* o = t.data<float>();
    for (int64_t i = 0; i < n; i++) o[i] = (float)src[i];
  }
  return t;
}

}  // namespace

BatchTensors to_tensors(const tasks::Batch& b) {
  const int64_t B = b.batch_size, T = b.seq_len, T2 = b.seq_len2, F = b.feature_dim, D = b.target_dim;
  BatchTensors t;
  t.tokens = copy_of(b.tokens, {B, T}, DType::i64, "tokens");
  t.mask = copy_of(b.mask, {B, T}, DType::f32, "mask");
  t.labels = copy_of(b.labels, {B}, DType::i64, "labels");
  t.tokens2 = copy_of(b.tokens2, {B, T2}, DType::i64, "tokens2");
  t.mask2 = copy_of(b.mask2, {B, T2}, DType::f32, "mask2");
  t.features = copy_of(b.features, {B, T, F}, DType::f32, "features");
  t.target_features = copy_of(b.target_features, {B, D}, DType::f32, "target_features");
  return t;
}

}  // namespace dl::harness
