// tensor/ops.h - every tensor-level op (no autograd), one include per family.
// Each family header states its broadcasting and shape rules; autograd/ops.h wraps them with gradients.
#pragma once
#include "tensor/elementwise.h"
#include "tensor/tensor.h"
// families added by their authors, one line each:
#include "tensor/reduce.h"
#include "tensor/nn_kernels.h"
#include "tensor/linalg.h"
#include "tensor/shape_ops.h"
#include "tensor/indexing.h"
#include "tensor/fft.h"
#include "tensor/conv.h"
