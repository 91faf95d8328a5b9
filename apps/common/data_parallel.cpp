// apps/common/data_parallel.cpp - gradient buckets, ZeRO-1 ownership and the optimizer state's round trip
// (see data_parallel.h).
#include "apps/common/data_parallel.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "optim/clip.h"
#include "tensor/safetensors.h"

namespace dl::harness {

using Clock = std::chrono::steady_clock;

static void check_f32(const Tensor& t, const std::string& name, const char* what) {
  if (t.dtype() != DType::f32)
    throw CommError("data-parallel training needs float32 " + std::string(what) + "; '" + name + "' is " + dtype_name(t.dtype()));
}

static float* f32_ptr(const Tensor& t) { return static_cast<float*>(t.raw_data()); }  // host or device memory

BucketPlan plan_buckets(const std::vector<int64_t>& numels, int64_t bucket_bytes, int zero1_ranks) {
  BucketPlan p;
  int64_t bytes = bucket_bytes;  // a new bucket first
  for (size_t i = 0; i < numels.size(); i++) {
    if (bytes >= bucket_bytes) p.numel.push_back(0), p.params.emplace_back(), bytes = 0;
    p.bucket.push_back(p.numel.size() - 1);
    p.offset.push_back(p.numel.back());
    p.params.back().push_back(i);
    p.numel.back() += numels[i];
    bytes += numels[i] * 4;
  }
  if (zero1_ranks <= 0) return p;
  // ZeRO-1: within each bucket, largest parameter first into the segment holding the fewest floats (the lower rank on
  // a tie); then every segment is as long as the bucket's longest, and each parameter's slice moves into its owner's
  const int W = zero1_ranks;
  p.owner.assign(numels.size(), 0);
  for (size_t b = 0; b < p.params.size(); b++) {
    std::vector<size_t> by_size = p.params[b];
    std::stable_sort(by_size.begin(), by_size.end(), [&](size_t x, size_t y) { return numels[x] > numels[y]; });
    std::vector<int64_t> fill(W, 0);
    std::vector<int64_t> at(numels.size(), 0);  // offset within the owner's segment
    for (size_t i : by_size) {
      int r = (int)(std::min_element(fill.begin(), fill.end()) - fill.begin());
      p.owner[i] = r, at[i] = fill[r], fill[r] += numels[i];
    }
    p.segment.push_back(*std::max_element(fill.begin(), fill.end()));
    p.numel[b] = W * p.segment[b];
    for (size_t i : p.params[b]) p.offset[i] = p.owner[i] * p.segment[b] + at[i];
  }
  return p;
}

DataParallel::DataParallel(nn::Module& model, optim::Optimizer& opt, Communicator& comm, DataParallelOptions o)
    : model_(model), opt_(opt), comm_(comm), o_(o) {
  std::map<VarImpl*, std::string> in_opt;  // what the optimizer steps, by its names
  for (auto& p : opt.all_params()) in_opt[p.var.impl()] = p.name;
  auto named = model.named_parameters(true);
  for (auto it = named.rbegin(); it != named.rend(); ++it)  // reverse order: the order gradients complete
    if (in_opt.count(it->second.impl())) params_.push_back(it->second), names_.push_back(in_opt[it->second.impl()]);
  if (comm.buffer_device() != Device::cpu)  // nccl: the buckets are on the device, so the parameters must be too
    for (size_t i = 0; i < params_.size(); i++)
      if (params_[i].data().device() != comm.buffer_device())
        throw CommError("the " + comm.name() + " communicator reduces " + device_name(comm.buffer_device()) +
                        " buffers, but the parameter '" + names_[i] + "' is on the " + device_name(params_[i].data().device()) +
                        ": train with --device " + device_name(comm.buffer_device()) + ", or use --comm mpi");
  std::vector<int64_t> numels;
  for (auto& p : params_) numels.push_back(p.numel());
  BucketPlan plan = plan_buckets(numels, o.bucket_bytes, o.zero1 ? comm.size() : 0);
  bucket_of_ = plan.bucket, offset_ = plan.offset;
  owner_ = o.zero1 ? plan.owner : std::vector<int>(params_.size(), -1);
  for (size_t b = 0; b < plan.params.size(); b++) {
    buckets_.emplace_back();
    buckets_.back().params = plan.params[b], buckets_.back().numel = plan.numel[b];
    if (o.zero1) buckets_.back().segment = plan.segment[b];
  }
  for (size_t i = 0; i < params_.size(); i++) params_[i].set_grad_hook([this, i] { on_ready(i); });
}

DataParallel::~DataParallel() {
  for (auto& p : params_) p.set_grad_hook(nullptr);
}

// The buffer a non-blocking collective on t works in: t itself where the communicator's buffers live (contiguous),
// else a contiguous copy there, which the caller copies back (mpi with parameters on a device: a host round trip).
Tensor DataParallel::comm_buffer(const Tensor& t, const std::string& name) const {
  check_f32(t, name, "parameters");
  const Device d = comm_.buffer_device();
  return t.device() == d ? t.contiguous() : t.to(d).contiguous();
}

void DataParallel::broadcast_parameters() {
  for (auto& [name, p] : model_.named_parameters()) {
    Tensor& t = p.mutable_data();
    if (t.device() == Device::cpu) {  // any dtype, as bytes on the host (every communicator's blocking broadcast)
      comm_.broadcast(t.raw_data(), t.numel() * (int64_t)dtype_size(t.dtype()), 0);
      continue;
    }
    Tensor buf = comm_buffer(t, name);  // on a device: nccl broadcasts it in place
    comm_.wait(comm_.ibroadcast(f32_ptr(buf), buf.numel(), 0), "broadcast of the initial '" + name + "'");
    if (!buf.shares_storage_with(t)) t.copy_(buf.view(t.shape()));
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

void DataParallel::make_buffers(Bucket& b) const {
  if (b.flat.defined()) return;
  b.flat = zeros({b.numel}, DType::f32, comm_.buffer_device());  // zero1: the segments' padding stays zero
  if (o_.zero1) b.shard = zeros({b.segment}, DType::f32, comm_.buffer_device());
}

void DataParallel::launch(Bucket& b) {  // flatten: each gradient into its slice (on the device when both are there)
  make_buffers(b);
  for (size_t i : b.params) {
    Tensor slice = b.flat.narrow(0, offset_[i], params_[i].numel());
    const Tensor& g = params_[i].grad();
    if (!g.defined()) {  // a parameter without a gradient this step adds zeros
      slice.zero_();
      continue;
    }
    check_f32(g, names_[i], "gradients");
    slice.copy_(g.reshape({params_[i].numel()}));
  }
  b.handle = o_.zero1 ? comm_.ireduce_scatter_sum(f32_ptr(b.flat), f32_ptr(b.shard), b.segment)
                      : comm_.iallreduce_sum(f32_ptr(b.flat), b.numel);
  b.launched = true;
}

Tensor DataParallel::own_slice(size_t param) const {
  const Bucket& b = buckets_[bucket_of_[param]];
  return b.shard.narrow(0, offset_[param] - owner_[param] * b.segment, params_[param].numel());
}

void DataParallel::finish() {
  if (!armed_) return;
  while (next_launch_ < buckets_.size()) launch(buckets_[next_launch_++]);  // parameters whose hooks never fired
  auto t0 = Clock::now();
  for (size_t bi = 0; bi < buckets_.size(); bi++) {
    Bucket& b = buckets_[bi];
    comm_.wait(b.handle, "gradient bucket " + std::to_string(bi) + " of " + std::to_string(buckets_.size()));
    for (size_t i : b.params) {  // unflatten
      if (o_.zero1 && owner_[i] != comm_.rank()) {
        params_[i].zero_grad();  // another rank updates it
        continue;
      }
      Tensor sum = o_.zero1 ? own_slice(i) : b.flat.narrow(0, offset_[i], params_[i].numel());
      bool any = params_[i].grad().defined();  // else: did another rank give it one? (no rank: it keeps none)
      if (!any) {
        std::vector<float> v = sum.to_vector();
        any = std::any_of(v.begin(), v.end(), [](float x) { return x != 0.f; });
      }
      if (!any) continue;
      if (!params_[i].grad().defined()) params_[i].mutable_grad() = zeros(params_[i].shape(), DType::f32, params_[i].data().device());
      params_[i].mutable_grad().copy_(sum.view(params_[i].shape()));
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

void DataParallel::after_step() {  // zero1: every owner's updated parameters to every rank, one all-gather per bucket
  if (!o_.zero1) return;
  auto t0 = Clock::now();
  std::vector<Communicator::Handle> hs;
  for (Bucket& b : buckets_) {
    make_buffers(b);  // made by the first launch, unless no backward came before this step
    for (size_t i : b.params)
      if (owner_[i] == comm_.rank()) {
        check_f32(params_[i].data(), names_[i], "parameters");
        own_slice(i).copy_(params_[i].data().reshape({params_[i].numel()}));
      }
    hs.push_back(comm_.iallgather(f32_ptr(b.shard), f32_ptr(b.flat), b.segment));
  }
  for (size_t bi = 0; bi < buckets_.size(); bi++) {
    comm_.wait(hs[bi], "all-gather of the updated parameters, bucket " + std::to_string(bi) + " of " + std::to_string(buckets_.size()));
    for (size_t i : buckets_[bi].params)
      if (owner_[i] != comm_.rank())
        params_[i].mutable_data().copy_(buckets_[bi].flat.narrow(0, offset_[i], params_[i].numel()).view(params_[i].shape()));
  }
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
