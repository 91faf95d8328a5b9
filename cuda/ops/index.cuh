// cuda/ops/index.cuh - device embedding lookup and its backward, and the dropout mask, as Thrust
// algorithms over functors.
//
// Shape letters: V rows of the table, D its width, N looked-up indices.
//   embedding            out[n, :] = weight[idx[n], :]                        one thread per output element
//   embedding_backward   dW[v, :] = sum over n with idx[n] = v of dy[n, :]    sort + segmented sum, no atomics:
//     1. (idx, n) pairs are stable-sorted by idx, so each v's rows form one segment, in increasing n;
//     2. reduce_by_key over the sorted idx gives the distinct v and their counts, an exclusive scan their starts;
//     3. one thread per (chunk of at most 128 rows of a segment, d) adds dy[n, d] over its chunk in n order, then one
//        thread per (segment, d) adds its chunks' sums in order.
//   Deterministic; a segment of at most 128 rows is summed in the CPU's order (index order), so equal to the CPU's;
//   a longer one in chunks (the same numbers to float rounding).
//   dropout_mask         mask[i] = 1/(1-p) if draw(i) >= p 2^32 else 0, draw(i) the counter-based draw of
//     tensor/nn_kernels.h: row_draw(row_key(base, i / 4096), i % 4096), the one copy of tensor/counter_hash.h
//     (host and device); tests/cuda_logic checks the device mask is the CPU's bit for bit.
// Scratch buffers are Tensors on the input's device (the caching allocator on the GPU, host memory in the
// CPU test). Indices are checked by the caller (tensor/indexing.cpp checks them on the host today).
#pragma once
#include <thrust/copy.h>
#include <thrust/fill.h>
#include <thrust/iterator/constant_iterator.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>

#include "cuda/ops/common.cuh"

namespace dl::ops {

template <class T> struct EmbeddingF {
  const T* weight;
  const int64_t* idx;
  T* out;
  int64_t D;
  DL_HD void operator()(int64_t i) const { out[i] = weight[idx[i / D] * D + i % D]; }
};

// weight contiguous (V, D); idx contiguous (N) checked in [0, V); out contiguous (N, D).
template <class Exec> void embedding(const Exec& exec, const Tensor& weight, const Tensor& idx, const Tensor& out) {
  int64_t D = weight.size(1);
  dispatch_float(weight.dtype(), "embedding (cuda)", [&]<class T>() {
    for_n(exec, out.numel(), EmbeddingF<T>{dptr<T>(weight), dptr<int64_t>(idx), dptr<T>(out), D});
  });
}

// A long segment (a frequent index: 20 tokens in ListOps, 2 in the bit tasks) is summed in chunks of kSegmentChunk rows
// at once, then the chunks' sums in order: one thread walking 30,000 rows alone left the GPU nearly idle. A segment of
// at most kSegmentChunk rows is one chunk, its sum the CPU's to the bit.
constexpr int64_t kSegmentChunk = 128;

struct ChunkCountF {  // chunks[s] = the chunks of segment s
  const int64_t* counts;
  int64_t* chunks;
  DL_HD void operator()(int64_t s) const { chunks[s] = (counts[s] + kSegmentChunk - 1) / kSegmentChunk; }
};

template <class T> struct ChunkSumF {  // partial[q, d] = sum of dy[n, d] over chunk q's rows, in index order
  const T* dy;
  const int64_t *rows, *starts, *counts, *cstart;  // cstart: each segment's first chunk (exclusive scan of the chunks)
  T* partial;
  int64_t D, nseg;
  DL_HD void operator()(int64_t i) const {
    const int64_t q = i / D, d = i % D;
    int64_t lo = 0, hi = nseg - 1;  // the segment of chunk q: the last s with cstart[s] <= q
    while (lo < hi) {
      const int64_t mid = (lo + hi + 1) / 2;
      if (cstart[mid] <= q) lo = mid;
      else hi = mid - 1;
    }
    const int64_t k0 = starts[lo] + (q - cstart[lo]) * kSegmentChunk, end = starts[lo] + counts[lo];
    const int64_t k1 = k0 + kSegmentChunk < end ? k0 + kSegmentChunk : end;
    T acc = 0;
    for (int64_t k = k0; k < k1; k++) acc += dy[rows[k] * D + d];
    partial[i] = acc;
  }
};

template <class T> struct SegmentSumF {  // dw[keys[s], d] = the sum of segment s's chunk sums, in order
  const T* partial;
  const int64_t *keys, *cstart, *chunks;
  T* dw;
  int64_t D;
  DL_HD void operator()(int64_t i) const {
    int64_t s = i / D, d = i % D;
    T acc = 0;
    for (int64_t q = cstart[s]; q < cstart[s] + chunks[s]; q++) acc += partial[q * D + d];
    dw[keys[s] * D + d] = acc;
  }
};

// dy contiguous (N, D); idx contiguous (N); dw contiguous (V, D), zero-filled here.
template <class Exec> void embedding_backward(const Exec& exec, const Tensor& dy, const Tensor& idx, const Tensor& dw) {
  int64_t N = idx.numel(), D = dw.size(1);
  Device dev = dw.device();
  dispatch_float(dw.dtype(), "embedding_backward (cuda)", [&]<class T>() {
    thrust::fill(exec, dptr<T>(dw), dptr<T>(dw) + dw.numel(), (T)0);
    if (N == 0 || D == 0) return;
    Tensor keys = Tensor::empty({N}, DType::i64, dev), rows = Tensor::empty({N}, DType::i64, dev);
    Tensor ukeys = Tensor::empty({N}, DType::i64, dev), counts = Tensor::empty({N}, DType::i64, dev);
    Tensor starts = Tensor::empty({N}, DType::i64, dev);
    int64_t *pk = dptr<int64_t>(keys), *pr = dptr<int64_t>(rows), *pc = dptr<int64_t>(counts);
    thrust::copy(exec, dptr<int64_t>(idx), dptr<int64_t>(idx) + N, pk);
    thrust::sequence(exec, pr, pr + N);
    thrust::stable_sort_by_key(exec, pk, pk + N, pr);
    auto ends = thrust::reduce_by_key(exec, pk, pk + N, thrust::constant_iterator<int64_t>(1), dptr<int64_t>(ukeys), pc);
    int64_t nseg = ends.first - dptr<int64_t>(ukeys);
    thrust::exclusive_scan(exec, pc, pc + nseg, dptr<int64_t>(starts));
    Tensor chunks = Tensor::empty({nseg}, DType::i64, dev), cstart = Tensor::empty({nseg}, DType::i64, dev);
    int64_t *pn = dptr<int64_t>(chunks), *pq = dptr<int64_t>(cstart);
    for_n(exec, nseg, ChunkCountF{pc, pn});
    thrust::exclusive_scan(exec, pn, pn + nseg, pq);
    const int64_t nchunks = thrust::reduce(exec, pn, pn + nseg, (int64_t)0);
    Tensor partial = Tensor::empty({nchunks, D}, dw.dtype(), dev);
    for_n(exec, nchunks * D, ChunkSumF<T>{dptr<T>(dy), pr, dptr<int64_t>(starts), pc, pq, dptr<T>(partial), D, nseg});
    for_n(exec, nseg * D, SegmentSumF<T>{dptr<T>(partial), dptr<int64_t>(ukeys), pq, pn, dptr<T>(dw), D});
  });
}

// ---------------------------------------------------------------------------------------------
// The draws of tensor/nn_kernels.h's dropout mask (tensor/counter_hash.h), in rows of 4096.
DL_HD inline uint32_t dropout_draw(uint64_t base, int64_t i) {
  constexpr int64_t kChunk = 4096;  // row length of the draws: part of the mask's definition (tensor/nn_kernels.cpp)
  return row_draw(row_key(base, (uint64_t)(i / kChunk)), (uint32_t)(i % kChunk));
}

template <class T> struct DropoutMaskF {
  uint64_t base, threshold;
  T keep;
  T* mask;
  DL_HD void operator()(int64_t i) const { mask[i] = (uint64_t)dropout_draw(base, i) >= threshold ? keep : (T)0; }
};

// mask contiguous: 1/(1-p) where kept, 0 where dropped; base is the one u64 the CPU draws from its Generator.
template <class Exec> void dropout_mask(const Exec& exec, uint64_t base, double p, const Tensor& mask) {
  uint64_t thr = (uint64_t)llround(p * 4294967296.0);
  double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
  dispatch_float(mask.dtype(), "dropout (cuda)", [&]<class T>() {
    for_n(exec, mask.numel(), DropoutMaskF<T>{base, thr, (T)scale, dptr<T>(mask)});
  });
}

}  // namespace dl::ops
