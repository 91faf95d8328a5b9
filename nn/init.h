// nn/init.h - parameter initialisers, each drawing from a seeded Generator (same seed, same weights).
//
// fan_in/fan_out follow PyTorch: for a weight of shape (out, in, *k), fan_in = in * prod(k), fan_out = out * prod(k).
//   normal(std)              N(0, std^2)                         GPT-2 uses std 0.02
//   uniform(a)               U(-a, a)
//   xavier_uniform(gain)     U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out))   (Glorot & Bengio 2010)
//   kaiming_uniform_linear   U(-1/sqrt(fan_in), 1/sqrt(fan_in))  what torch.nn.Linear does by default
//   orthogonal(gain)         gain * Q from the QR of a normal matrix, signs fixed by diag(R) (Saxe et al. 2014)
#pragma once
#include "tensor/tensor.h"

namespace dl::nn::init {

int64_t fan_in(const Shape& s);
int64_t fan_out(const Shape& s);
Tensor normal(const Shape& s, double std, Generator& g);
Tensor uniform(const Shape& s, double a, Generator& g);
Tensor xavier_uniform(const Shape& s, Generator& g, double gain = 1.0);
Tensor xavier_normal(const Shape& s, Generator& g, double gain = 1.0);
Tensor kaiming_uniform_linear(const Shape& s, Generator& g);
Tensor orthogonal(const Shape& s, Generator& g, double gain = 1.0);

}  // namespace dl::nn::init
