// apps/fpt/model.h - the FPT model (universal-computation's fpt.py, on nn's GPT-2) and the LSTM baseline.
//
//   input    Linear(features, d) with orthogonal init, gain 1.41, zero bias, then dropout (continuous inputs),
//            or Embedding(vocab, d) (tokens)                                       names: input.*
//   body     GPT-2's transformer fed embeddings (wte unused): x + wpe, n x pre-LN blocks, ln_f  transformer.*
//            or a `lstm_layers`-layer LSTM with layer norm (the paper's LNLSTM)         lstm.*
//   readout  the last `readout` positions (the last token for classification: GPT-2 is causal, so it sees the
//            whole sequence; masked_readout: each sequence's last real token instead)
//   output   Linear(d, outputs) per read-out token                                       output.*
// Which parameters train is the arm's (config.h); trainable_rule() says it for a parameter name, and freeze()
// applies it. The body can be loaded from a pretrained GPT-2 file (HF names, "transformer." prefix).
#pragma once
#include <memory>
#include <string>

#include "config.h"
#include "data.h"
#include "nn/layers.h"
#include "nn/models/gpt2.h"
#include "nn/recurrent/lstm.h"

namespace fpt {

// The transformer body's GPT-2 configuration for a cell (byte vocabulary for the LM: 256).
dl::nn::GPT2Config gpt2_config(const CellConfig& c);

class FptModel : public dl::nn::Module {
 public:
  FptModel(const CellConfig& c, const FptTask& t, dl::Generator& g);
  std::string type_name() const override { return "FptModel"; }
  // (B, readout, outputs); attention (transformer body): every block's weights (B, NH, T, T) when asked
  dl::Var forward(const FptBatch& b, std::vector<dl::Var>* attention = nullptr);
  dl::Var loss(const FptBatch& b);                       // mean cross-entropy (per bit for bit tasks)
  int64_t correct(const FptBatch& b, int64_t* counted);  // right predictions (bits or examples) in a batch
  // Whether a parameter trains in this arm (names as named_parameters gives them).
  static bool trainable_rule(const std::string& arm, const std::string& name);
  int freeze();  // applies trainable_rule to every parameter; returns how many are frozen
  bool has_transformer() const { return transformer_ != nullptr; }
  dl::nn::GPT2Transformer& transformer() { return *transformer_; }

  CellConfig cfg;
  FptTask shape;  // the task's shape fields (its data is not copied: see the constructor)

 private:
  std::shared_ptr<dl::nn::Linear> in_linear_, output_;
  std::shared_ptr<dl::nn::Embedding> in_embed_;
  std::shared_ptr<dl::nn::Dropout> in_drop_;
  std::shared_ptr<dl::nn::GPT2Transformer> transformer_;
  std::shared_ptr<dl::nn::SequenceLayer> lstm_;
};

}  // namespace fpt
