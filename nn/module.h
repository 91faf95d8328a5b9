// nn/module.h - the Module tree: named parameters, buffers and children, train/eval, freezing, state dicts.
//
// A Module owns Vars (parameters, requires_grad) and Tensors (buffers, e.g. BatchNorm running stats) under
// names, and child Modules under names; the dotted path of a parameter ("layers.0.attn.q_proj.weight") is its
// name in state_dict() and therefore in safetensors checkpoints. Each concrete module names its tensors as
// the equivalent PyTorch module does, so weights move both ways (docs/checkpoints.md).
//
// Each module has its own forward(...) with the arguments it needs; there is no virtual forward here.
// Sequence layers that apps choose by name implement nn/registry.h's SequenceLayer. What an inspection tool may ask
// of any module (its attention weights, convolution taps, state space kernel) is a handful of hooks below, answered
// in nn/inspect.h's forms.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/ops.h"
#include "nn/inspect.h"

namespace dl::nn {

// What load_state_dict found; `ok()` when nothing is missing, unexpected or mis-shaped.
struct LoadReport {
  std::vector<std::string> loaded, missing, unexpected, shape_mismatch;  // shape_mismatch: "name: have [..], file [..]"
  bool ok() const { return missing.empty() && unexpected.empty() && shape_mismatch.empty(); }
  std::string str() const;
};

// How strict a load is. A partial load must be asked for explicitly: name what may be missing (e.g. a fresh
// classification head) and what in the file may be ignored (e.g. the pretraining head).
struct LoadOptions {
  bool strict = true;                          // throw unless every name matches exactly
  std::vector<std::string> allow_missing;      // name prefixes allowed to be absent from the file
  std::vector<std::string> ignore_unexpected;  // name prefixes in the file to skip silently
  std::string strip_prefix;                    // drop this prefix from file names first (e.g. "backbone.")
};

struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Module {
 public:
  virtual ~Module() = default;
  virtual std::string type_name() const = 0;
  virtual std::string extra_repr() const { return ""; }  // e.g. "in=128, out=512"

  // ---- the tree ----
  std::vector<std::pair<std::string, Var>> named_parameters(bool trainable_only = false) const;
  std::vector<Var> parameters(bool trainable_only = false) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  // Every buffer of the tree replaced by its copy on device d (a no-op where it is already): they are read and updated
  // by tensor ops, which run on either device. Parameters move in place (apps/common/device.h's place_model).
  void move_buffers(Device d);
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const { return children_; }
  int64_t num_parameters(bool trainable_only = false) const;

  // ---- modes ----
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void zero_grad();

  // Freeze/unfreeze: requires_grad = value for every parameter whose dotted name satisfies `pred`.
  // Returns how many parameters changed. (FPT: freeze everything, then unfreeze ln/wpe/input/output.)
  int set_requires_grad(const std::function<bool(const std::string&)>& pred, bool value);

  // ---- state ----
  std::map<std::string, Tensor> state_dict() const;  // parameters and buffers (shared, not copied)
  LoadReport load_state_dict(const std::map<std::string, Tensor>& sd, const LoadOptions& opt = {});
  void save(const std::string& path, const std::map<std::string, std::string>& metadata = {}) const;  // safetensors, atomic
  LoadReport load(const std::string& path, const LoadOptions& opt = {});

  std::string str(int indent = 0) const;  // a readable tree with parameter shapes

  // ---- what an inspection tool may ask (nn/inspect.h; apps/explain walks the tree and asks every module) ----
  // A layer with something to picture answers; the defaults answer "nothing", so explain never names a layer's type.
  //   record_attention(slot)  attention: while slot is set (null stops), forward appends its softmax weights
  //                           (B, NH, T, S) to it; returns whether the module has attention weights at all
  //   conv_taps()             a convolution: its taps in one described form (ConvTaps; kind "" = no convolution)
  //   record_conv_taps(slot)  a convolution whose taps are predicted from its input: forward appends them (B, L, R, K)
  //   ssm_kernel(L)           a state space layer: its kernel K (Cc, H, L) and step sizes (SSMKernel; K undefined = none)
  virtual bool record_attention(std::vector<Var>* slot) { return false; }
  virtual ConvTaps conv_taps() const { return {}; }
  virtual bool record_conv_taps(std::vector<Var>* slot) { return false; }
  virtual SSMKernel ssm_kernel(int64_t L) { return {}; }

 protected:
  Var register_parameter(const std::string& name, Tensor init, bool requires_grad = true);
  void register_buffer(const std::string& name, Tensor t);
  template <class M> std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    children_.emplace_back(name, m);
    return m;
  }
  Tensor& buffer(const std::string& name);  // for updates (e.g. running means)

 private:
  std::vector<std::pair<std::string, Var>> params_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// A list of modules of one kind, named 0, 1, 2, ... as torch.nn.ModuleList.
template <class M> class ModuleList : public Module {
 public:
  std::string type_name() const override { return "ModuleList"; }
  void push_back(std::shared_ptr<M> m) { items_.push_back(register_module(std::to_string(items_.size()), m)); }
  size_t size() const { return items_.size(); }
  M& operator[](size_t i) { return *items_[i]; }
  const std::vector<std::shared_ptr<M>>& items() const { return items_; }

 private:
  std::vector<std::shared_ptr<M>> items_;
};

}  // namespace dl::nn
