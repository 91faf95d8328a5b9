// tests/nn/fused/layer_agreement.h - MultiheadAttention on its fast path (packed = true: the packed or the blocked
// kernel, whichever the length picks) against the same layer with packed = false (the composed path), with the same
// weights: rotary or not, causal or not, with a key padding mask (sequence 1 is `real_len` long); the output and
// every gradient (input and parameters) agree within kAgreeF32. test_qkv_attention.cpp and
// test_flash_attention.cpp call it at lengths that pick their kernel.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nn/attention/attention.h"
#include "op_harness.h"
#include "tolerance.h"

namespace dl::test {

inline void expect_fast_layer_agrees_with_composed(nn::AttentionOptions o, int64_t T, int64_t real_len) {
  const int64_t B = 2, C = 32;
  for (bool rotary : {false, true})
    for (bool causal : {false, true}) {
      o.heads = 4, o.rotary = rotary, o.causal = causal, o.packed = true;
      Generator g1(31), g2(31);
      nn::MultiheadAttention fast(C, o, g1);
      o.packed = false;
      nn::MultiheadAttention plain(C, o, g2);
      Generator g(5);
      Tensor x0 = randn({B, T, C}, g), dy = randn({B, T, C}, g);
      std::vector<float> km(B * T, 1.f);
      for (int64_t t = real_len; t < T; t++) km[T + t] = 0.f;  // sequence 1 is real_len long
      Tensor mask = from_vector(km, {B, T});
      Var xa(x0.clone(), true), xb(x0.clone(), true);
      Var ya = fast.forward(xa, mask), yb = plain.forward(xb, mask);
      ya.backward(dy);
      yb.backward(dy);
      const std::string what = "T " + std::to_string(T) + (rotary ? " rotary " : " ") + (causal ? "causal" : "full");
      EXPECT_TRUE(all_close(ya.data(), yb.data(), kAgreeF32, what + " out"));
      EXPECT_TRUE(all_close(xa.grad(), xb.grad(), kAgreeF32, what + " dx"));
      auto pa = fast.named_parameters(), pb = plain.named_parameters();
      for (size_t i = 0; i < pa.size(); i++)
        EXPECT_TRUE(all_close(pa[i].second.grad(), pb[i].second.grad(), kAgreeF32, what + " d" + pa[i].first));
    }
}

}  // namespace dl::test
