// apps/common/device.h - `--device cpu|cuda`: the one place the harness turns a device name into a Device and puts
// a model there.
//
// A cell runs on one device. The app builds its model on the CPU (initialisation draws the same numbers whatever the
// device); run_phase then moves every parameter to ctx.device before the first step or resume, in place - the same
// Var, so the optimiser built on it keeps working, and its moments are created beside each parameter (optim/adam.cpp).
// Inputs follow the model: an app makes its batch tensors on the CPU and moves them to model_device(m) (indices and
// masks are also moved by the ops that take them: tensor/indexing.cpp, masked_fill); losses and metrics come back to
// the host through item() / to(Device::cpu). Checkpoints are written from host copies (the same files as a CPU run),
// so a run moves between devices.
// Buffers (BatchNorm's running statistics, S4's kernel length) move with the model (Module::move_buffers): tensor
// ops read and update them on either device.
#pragma once
#include <string>

#include "nn/module.h"

namespace dl::harness {

// "cpu" or "cuda"; a ConfigError for anything else, for a build without CUDA ("--device cuda: this build has no CUDA
// backend ...") and for a machine without a device ("--device cuda: no CUDA device (cudaGetDeviceCount: ...)").
Device parse_device(const std::string& name);

// Every parameter of m moved to d in place, and every buffer with it (a no-op where they are already).
void place_model(nn::Module& m, Device d);

// Where m's parameters are (the CPU for a model without parameters).
Device model_device(const nn::Module& m);

}  // namespace dl::harness
