// apps/common/data_parallel.h - data-parallel training over a Communicator (comm.h): every rank runs the same model
// on its shard of each global batch, and the gradients are summed across ranks as they come out of the backward.
//
//   start     rank 0's parameters are broadcast, so every replica starts equal
//   backward  the model's trainable parameters, in reverse order (the order their gradients complete), form
//             buckets of about bucket_bytes; a parameter's grad_hook (autograd/variable.h) marks it ready, and a
//             bucket whose parameters are all ready is launched as a non-blocking all-reduce - in bucket order, the
//             same on every rank - while the backward goes on towards the input
//   finish    wait for the buckets, copy the sums back into the gradients
// Each rank's loss is already weighted by its share of the global batch (n_rank / B), so the SUM over ranks is the
// gradient of the global batch's mean loss; the ranks then hold equal gradients, clip them alike and take the same
// optimizer step, so the replicas stay equal without a second broadcast.
//
// Where the buckets live: a bucket is one flat float32 tensor on the communicator's buffer_device() - host memory
// for mpi, this rank's GPU for nccl. Gradients are copied into it (flatten) and back (unflatten) with tensor copies,
// so with parameters on the device and nccl both copies stay on the device (no host round trip); with parameters on
// the device and mpi they cross to the host and back (correct, slower: what a build without NCCL does).
//
// ZeRO stage 1 (zero1): the optimizer state is sharded by parameter. Each bucket is cut into one equal segment per
// rank, and each parameter of the bucket is owned by one rank and placed in that rank's segment (largest first to the
// segment that holds the fewest floats, as FairScale's OSS assigns owners, but per bucket, so a bucket's segments
// come out even; the shorter ones are padded with zeros). A full bucket is reduce-scattered: each rank receives the
// sums of its own segment only, i.e. the gradients of the parameters it owns. The global gradient norm for clipping
// is the all-reduced sum of the owners' squared norms; each rank steps only the parameters it owns (the optimizer
// skips parameters without a gradient and never creates state for them), writes them into its segment, and one
// all-gather per bucket gives every rank every updated parameter. Per step that is the traffic of one all-reduce
// (a reduce-scatter plus an all-gather), in as many collectives as there are buckets. Checkpoints hold the whole
// state: gather_optimizer_state() collects the owners' moments on rank 0 before a save, and
// keep_own_optimizer_state() drops the others' after a load (so a run resumes with any number of ranks, with or
// without zero1).
#pragma once
#include <chrono>
#include <cstdint>
#include <vector>

#include "apps/common/comm.h"
#include "nn/module.h"
#include "optim/optimizer.h"

namespace dl::harness {

// The layout of the buckets (a plain function, so it is tested on any machine): parameters of the given sizes
// (numels, in bucket order) fill buckets of at least bucket_bytes of float32 each (the last may be smaller).
// Parameter i's gradient is the slice [offset[i], offset[i] + numels[i]) of bucket bucket[i]'s flat buffer of
// numel[bucket] floats.
// With zero1_ranks = W > 0 (ZeRO-1), the same buckets are each cut into W segments of segment[bucket] floats
// (numel = W x segment); owner[i] is the rank that owns parameter i, and its slice lies inside that rank's segment
// [owner x segment, (owner + 1) x segment). Without it, owner and segment are empty and the slices tile each bucket.
struct BucketPlan {
  std::vector<size_t> bucket;    // per parameter
  std::vector<int64_t> offset;   // per parameter, within its bucket
  std::vector<int64_t> numel;    // per bucket
  std::vector<std::vector<size_t>> params;  // per bucket, its parameters in order
  std::vector<int> owner;        // ZeRO-1: per parameter
  std::vector<int64_t> segment;  // ZeRO-1: per bucket, the floats of each rank's segment
};
BucketPlan plan_buckets(const std::vector<int64_t>& numels, int64_t bucket_bytes, int zero1_ranks = 0);

struct DataParallelOptions {
  bool zero1 = false;
  int64_t bucket_bytes = 25 << 20;  // PyTorch DDP's default bucket size
};

class DataParallel {
 public:
  DataParallel(nn::Module& model, optim::Optimizer& opt, Communicator& comm, DataParallelOptions o = {});
  ~DataParallel();  // removes the gradient hooks
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  void broadcast_parameters();      // rank 0's values everywhere
  void arm();                       // the next backward is the step's last: reduce its gradients as they complete
  void finish();                    // wait; every gradient the rank needs is the sum over ranks (zero1: its own only)
  double clip(double max_norm);     // clip by the global gradient norm (0: no clipping); returns the norm
  void after_step();                // zero1: owners broadcast their updated parameters
  void gather_optimizer_state();    // zero1: rank 0's optimizer holds every parameter's state (before a save)
  void keep_own_optimizer_state();  // zero1: forget the state of parameters this rank does not own

  int owner(size_t param) const { return owner_.at(param); }  // zero1; plain data-parallel: -1
  double comm_seconds() const { return comm_s_; }             // time spent waiting on communication so far

 private:
  struct Bucket {
    std::vector<size_t> params;  // indices into params_
    int64_t numel = 0;
    Tensor flat;                 // the gradients, packed: float32 on comm.buffer_device(), made at the first launch
    int64_t segment = 0;         // zero1: floats per rank's segment (numel = size() x segment)
    Tensor shard;                // zero1: this rank's segment - its gradients' sums, then its updated parameters
    size_t ready = 0;
    Communicator::Handle handle = 0;
    bool launched = false;
  };
  void on_ready(size_t param);
  void launch_ready_buckets();
  void make_buffers(Bucket& b) const;  // the bucket's flat buffer (and zero1's shard), once
  void launch(Bucket& b);
  Tensor comm_buffer(const Tensor& t, const std::string& name) const;
  Tensor own_slice(size_t param) const;  // zero1: the parameter's place in its bucket's shard (this rank owns it)

  nn::Module& model_;
  optim::Optimizer& opt_;
  Communicator& comm_;
  DataParallelOptions o_;
  std::vector<Var> params_;         // trainable, in reverse order
  std::vector<std::string> names_;  // their optimizer names
  std::vector<size_t> bucket_of_;   // per parameter
  std::vector<int64_t> offset_;     // per parameter: where its gradient starts in its bucket
  std::vector<int> owner_;          // per parameter (zero1)
  std::vector<Bucket> buckets_;
  size_t next_launch_ = 0;
  bool armed_ = false;
  double comm_s_ = 0;
};

}  // namespace dl::harness
