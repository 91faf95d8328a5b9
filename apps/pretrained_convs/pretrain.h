// apps/pretrained_convs/pretrain.h - T5 span corruption on packaged English text, once per model, cached.
//
// The objective (Raffel et al. 2020; tasks/objectives.h): in windows of pt_len bytes of the Brown corpus and
// Debian's fortunes (tasks/english.h), round(pt_len * density) bytes in spans of mean length mean_span are
// replaced by sentinels in the input; the target lists each sentinel and the bytes it hid. One corruption per
// window, drawn once (seed 0): with pt_windows windows of which pretraining sees at most pt_steps * pt_batch, the
// corruption never repeats when pt_steps * pt_batch <= 0.95 pt_windows. AdamW at pt_lr with T5's inverse square
// root schedule after pt_warmup steps (T5 and the paper use Adafactor; AdamW is this project's deviation).
// The cache: <data cache>/pretrained_convs/<mixer>-<key>/ (key: the architecture after parameter matching and
// every pretraining field) holds the phase's checkpoints (a killed pretraining resumes), model.safetensors and
// info.json (the loss curve, the final validation loss, wall time, steps/s). Every seed of a cell fine-tunes from the
// same pretrained weights; the _xattn variants load their base model's, with a fresh pair block.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "apps/common/phase.h"
#include "config.h"
#include "model.h"

namespace pconv {

struct Pretrained {
  std::string path;  // model.safetensors
  nlohmann::json info;
};

Pretrained pretrained_model(const CellConfig& c, const dl::harness::RunContext& ctx, bool rebuild = false);

// The span-corruption phase itself (resumable from ctx.dir's checkpoints) on given windows: pretrained_model hands it
// span_corruption_data's, a test doctored ones; g is the generator whose state the checkpoints keep.
dl::harness::PhaseResult span_corruption(const CellConfig& c, const PretrainData& data, dl::nn::Seq2SeqModel& m,
                                         dl::Generator& g, const dl::harness::RunContext& ctx,
                                         std::vector<dl::harness::CurvePoint>& curve);

}  // namespace pconv
