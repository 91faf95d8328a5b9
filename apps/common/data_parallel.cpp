// apps/common/data_parallel.cpp - gradient buckets, ZeRO-1 ownership and the optimizer state's round trip
// (see data_parallel.h).
#include "apps/common/data_parallel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "optim/clip.h"
#include "tensor/safetensors.h"

namespace dl::harness {

using Clock = std::chrono::steady_clock;

static float* f32_data(const Tensor& t, const std::string& name, const char* what) {
  if (t.dtype() != DType::f32 || t.device() != Device::cpu || !t.is_contiguous())
    throw CommError("data-parallel training needs contiguous float32 CPU " + std::string(what) + "; '" + name + "' is not");
  return const_cast<float*>(t.data<float>());
}

DataParallel::DataParallel(nn::Module& model, optim::Optimizer& opt, Communicator& comm, DataParallelOptions o)
    : model_(model), opt_(opt), comm_(comm), o_(o) {
  std::map<VarImpl*, std::string> in_opt;  // what the optimizer steps, by its names
  for (auto& p : opt.all_params()) in_opt[p.var.impl()] = p.name;
  auto named = model.named_parameters(true);
  for (auto it = named.rbegin(); it != named.rend(); ++it)  // reverse order: the order gradients complete
    if (in_opt.count(it->second.impl())) params_.push_back(it->second), names_.push_back(in_opt[it->second.impl()]);
  if (o.zero1) {  // one bucket per parameter, owners by size: largest first to the least loaded rank
    std::vector<size_t> by_size(params_.size());
    for (size_t i = 0; i < by_size.size(); i++) by_size[i] = i;
    std::stable_sort(by_size.begin(), by_size.end(), [&](size_t a, size_t b) { return params_[a].numel() > params_[b].numel(); });
    std::vector<int64_t> load(comm.size(), 0);
    owner_.assign(params_.size(), 0);
    for (size_t i : by_size) {
      int r = (int)(std::min_element(load.begin(), load.end()) - load.begin());
      owner_[i] = r, load[r] += params_[i].numel();
    }
    for (size_t i = 0; i < params_.size(); i++) buckets_.push_back({{i}, {}, owner_[i]});
  } else {
    owner_.assign(params_.size(), -1);
    int64_t bytes = o.bucket_bytes;  // a new bucket first
    for (size_t i = 0; i < params_.size(); i++) {
      if (bytes >= o.bucket_bytes) buckets_.emplace_back(), bytes = 0;
      buckets_.back().params.push_back(i);
      bytes += params_[i].numel() * 4;
    }
  }
  bucket_of_.assign(params_.size(), 0);
  for (size_t b = 0; b < buckets_.size(); b++)
    for (size_t i : buckets_[b].params) bucket_of_[i] = b;
  for (size_t i = 0; i < params_.size(); i++) params_[i].set_grad_hook([this, i] { on_ready(i); });
}

DataParallel::~DataParallel() {
  for (auto& p : params_) p.set_grad_hook(nullptr);
}

void DataParallel::broadcast_parameters() {
  for (auto& [name, p] : model_.named_parameters()) {
    Tensor& t = p.mutable_data();
    comm_.broadcast(const_cast<void*>(t.raw_data()), t.numel() * (int64_t)dtype_size(t.dtype()), 0);
  }
}

void DataParallel::arm() {
  armed_ = true;
  next_launch_ = 0;
  for (auto& b : buckets_) b.ready = 0, b.launched = false;
}

void DataParallel::on_ready(size_t param) {
  if (!armed_) return;
  buckets_[bucket_of_[param]].ready++;
  launch_ready_buckets();
  for (size_t b = 0; b < next_launch_; b++) comm_.test(buckets_[b].handle);  // lets MPI progress meanwhile
}

void DataParallel::launch_ready_buckets() {  // in bucket order: every rank issues the collectives alike
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].ready == buckets_[next_launch_].params.size())
    launch(buckets_[next_launch_++]);
}

void DataParallel::launch(Bucket& b) {
  int64_t n = 0;
  for (size_t i : b.params) n += params_[i].numel();
  b.flat.assign(n, 0.f);
  int64_t off = 0;
  for (size_t i : b.params) {  // a parameter without a gradient this step adds zeros
    const Tensor& g = params_[i].grad();
    if (g.defined()) std::memcpy(b.flat.data() + off, f32_data(g, names_[i], "gradients"), params_[i].numel() * 4);
    off += params_[i].numel();
  }
  b.handle = o_.zero1 ? comm_.ireduce_sum(b.flat.data(), n, b.owner) : comm_.iallreduce_sum(b.flat.data(), n);
  b.launched = true;
}

void DataParallel::finish() {
  if (!armed_) return;
  while (next_launch_ < buckets_.size()) launch(buckets_[next_launch_++]);  // parameters whose hooks never fired
  auto t0 = Clock::now();
  for (size_t bi = 0; bi < buckets_.size(); bi++) {
    Bucket& b = buckets_[bi];
    comm_.wait(b.handle, "gradient bucket " + std::to_string(bi) + " of " + std::to_string(buckets_.size()));
    int64_t off = 0;
    for (size_t i : b.params) {
      const int64_t n = params_[i].numel();
      if (o_.zero1 && b.owner != comm_.rank()) {
        params_[i].zero_grad();  // another rank updates it
      } else {
        bool any = params_[i].grad().defined();
        for (int64_t k = 0; k < n && !any; k++) any = b.flat[off + k] != 0.f;
        if (any) {
          if (!params_[i].grad().defined()) params_[i].mutable_grad() = zeros(params_[i].shape());
          std::memcpy(f32_data(params_[i].grad(), names_[i], "gradients"), b.flat.data() + off, n * 4);
        }
      }
      off += n;
    }
  }
  comm_s_ += std::chrono::duration<double>(Clock::now() - t0).count();
  armed_ = false;
}

double DataParallel::clip(double max_norm) {
  if (!o_.zero1) return max_norm > 0 ? optim::clip_grad_norm(params_, max_norm) : optim::grad_norm(params_);
  std::vector<Var> own;
  for (size_t i = 0; i < params_.size(); i++)
    if (owner_[i] == comm_.rank()) own.push_back(params_[i]);
  double sq = std::pow(optim::grad_norm(own), 2);  // the owners' squared norms add up to the global one
  comm_.allreduce_sum(&sq, 1);
  double total = std::sqrt(sq), coef = max_norm / (total + 1e-6);
  if (max_norm > 0 && !(coef >= 1)) optim::scale_grads(own, coef);  // the rule of clip_grad_norm
  return total;
}

void DataParallel::after_step() {
  if (!o_.zero1) return;
  auto t0 = Clock::now();
  std::vector<Communicator::Handle> hs;
  for (size_t i = 0; i < params_.size(); i++)
    hs.push_back(comm_.ibroadcast(f32_data(params_[i].data(), names_[i], "parameters"), params_[i].numel(), owner_[i]));
  for (size_t i = 0; i < hs.size(); i++) comm_.wait(hs[i], "broadcast of the updated '" + names_[i] + "'");
  comm_s_ += std::chrono::duration<double>(Clock::now() - t0).count();
}

void DataParallel::gather_optimizer_state() {
  if (!o_.zero1) return;
  optim::OptimizerState mine = opt_.state_dict();
  std::vector<std::string> all = comm_.allgather(serialize_safetensors(mine.tensors, {{"json", mine.json}}, "optimizer state"));
  if (comm_.rank() != 0) return;
  optim::OptimizerState merged;
  nlohmann::json j = nlohmann::json::parse(mine.json);
  for (size_t r = 0; r < all.size(); r++) {
    TensorFile f = parse_safetensors(all[r], "rank " + std::to_string(r) + "'s optimizer state");
    for (auto& [k, t] : f.tensors) merged.tensors[k] = t;
    nlohmann::json theirs = nlohmann::json::parse(f.metadata.at("json"));  // a named object: the loop must not outlive it
    for (auto& [k, v] : theirs.at("param_steps").items()) j["param_steps"][k] = v;
  }
  merged.json = j.dump();
  opt_.load_state_dict(merged);
}

void DataParallel::keep_own_optimizer_state() {
  if (!o_.zero1) return;
  std::map<std::string, int> owner_of;
  for (size_t i = 0; i < params_.size(); i++) owner_of[names_[i]] = owner_[i];
  opt_.retain_state([&](const std::string& name) {
    auto it = owner_of.find(name);
    return it == owner_of.end() || it->second == comm_.rank();
  });
}

}  // namespace dl::harness
