// nn/losses.h - losses used by the pretraining objectives and tasks, composed from autograd primitives.
//
//   masked_token_loss(logits (..., V), targets (...))   mean cross entropy over positions with
//                                                       target != ignore_index (-100, as Hugging Face / torch)
//   masked_mse / masked_l1(pred (..., D), target (..., D), mask (...))
//                                                       sum over masked positions and D of (p - t)^2 or |p - t|,
//                                                       divided by (number of masked positions) * D: the mean
//                                                       over the masked elements (mask 1 = use, 0 = skip)
//   cosent_loss(cos (N), labels (N), lambda)            CoSENT (Su 2022):
//                                                       log(1 + sum_{i,j: label_i > label_j} exp(lambda (cos_j - cos_i)))
//                                                       = logsumexp([0, lambda (cos_j - cos_i) for those pairs]),
//                                                       lambda = 20; pushes every higher-labelled pair's cosine
//                                                       above every lower-labelled one's
#pragma once
#include "autograd/ops.h"

namespace dl::nn {

Var masked_token_loss(const Var& logits, const Tensor& targets, int64_t ignore_index = -100);
Var masked_mse(const Var& pred, const Var& target, const Tensor& mask);
Var masked_l1(const Var& pred, const Var& target, const Tensor& mask);
Var cosent_loss(const Var& cos, const Tensor& labels, double lambda = 20.0);

}  // namespace dl::nn
