// autograd/ops.h - every differentiable primitive, one include per family. Layers in nn/ are
// compositions of these and need no backward of their own.
#pragma once
#include "autograd/elementwise.h"
#include "autograd/variable.h"
#include "autograd/views.h"
// families added by their authors, one line each:
#include "autograd/reduce.h"
#include "autograd/nn_ops.h"
#include "autograd/linalg.h"
#include "autograd/shape_ops.h"
#include "autograd/indexing.h"
#include "autograd/fft.h"
#include "autograd/conv.h"
#include "autograd/device.h"
#include "autograd/feed_forward.h"
