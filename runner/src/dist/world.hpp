#pragma once
// The distributed world a rank lives in: rendezvous through c10d's TCPStore, a Gloo (CPU) or
// NCCL (CUDA) process group, and the collectives the engine and plugins need. A world of one
// process has no process group at all and every call is free.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "launch/world_env.hpp"

namespace runner::dist {

/// How to join the world.
struct WorldOptions {
  std::string backend =
      "auto";  ///< "auto" (nccl on CUDA when built with it, else gloo), "gloo", "nccl"
  double timeout_s = 300.0;  ///< rendezvous and collective timeout
  /// launch.gpu_ids: the CUDA device of local rank i is gpu_ids[i]; empty: cuda:local_rank.
  std::vector<int> gpu_ids;
};

/// Reductions; kAvg is a sum divided by the world size (Gloo has no AVG).
enum class ReduceOp { kSum, kAvg, kMax, kMin };

class World {
 public:
  /// Joins the world described by the environment (torchrun, runner's launcher, SLURM, MPI), or
  /// returns a single-process world when no launcher variables are set. Throws runner::Error
  /// naming host:port when the rendezvous cannot be hosted or reached, when ranks disagree on
  /// the world size, or when ranks are missing after timeout_s (naming them).
  static std::shared_ptr<World> init(const WorldOptions& options = {});
  /// Same, from an explicit place in the world.
  static std::shared_ptr<World> init(const launch::WorldEnv& env, const WorldOptions& options);
  /// A world of one process: no process group, every collective an identity.
  static std::shared_ptr<World> single();

  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  int local_rank() const { return env_.local_rank; }
  int local_world_size() const { return env_.local_world_size; }
  int node_rank() const { return env_.node_rank; }
  bool is_main() const { return env_.rank == 0; }
  bool is_local_main() const { return env_.local_rank == 0; }
  bool distributed() const { return env_.world_size > 1; }
  /// "none" (single process), "gloo" or "nccl".
  const std::string& backend() const { return backend_; }
  /// Where this rank's tensors live for collectives: cuda:cuda_index() with NCCL, else CPU.
  torch::Device device() const;
  /// The CUDA device this rank uses when it uses one: gpu_ids[local_rank], else local_rank;
  /// -1 when gpu_ids has no entry for this local rank (gpu_ids_too_short says so).
  int cuda_index() const { return cuda_index_; }
  const launch::WorldEnv& env() const { return env_; }

  /// Blocks until every rank has reached it (accelerate's wait_for_everyone).
  void barrier();
  /// Runs fn on the main process first, then on the others (e.g. a download, a cache build).
  void main_process_first(const std::function<void()>& fn);
  /// Reduces `tensor` in place across ranks; any floating dtype (bf16/fp16 go through fp32).
  void all_reduce_(torch::Tensor& tensor, ReduceOp op = ReduceOp::kSum);
  /// Reduces one number across ranks.
  double all_reduce(double value, ReduceOp op = ReduceOp::kSum);
  /// Reduces a CPU tensor in place over the ranks' host-side group (Gloo; beside NCCL, a Gloo
  /// group of its own; the shared-memory segment of CPU ranks on one host): no device work and no
  /// wait for a device stream, for control flags the host decides on every step (stop requests,
  /// checkpoint due) while the device runs ahead.
  void all_reduce_on_host_(torch::Tensor& tensor, ReduceOp op = ReduceOp::kSum);
  /// [W, ...]: every rank's `tensor` (same shape and dtype everywhere), in rank order.
  torch::Tensor all_gather(const torch::Tensor& tensor);
  /// Copies rank `root`'s tensors into everyone's, in place.
  void broadcast_(std::vector<torch::Tensor>& tensors, int root = 0);
  /// Copies rank 0's parameters and buffers into every rank's module (no autograd recorded).
  void broadcast_module(torch::nn::Module& module);

  struct Impl;
  /// Process-group internals for dist/ code (nullptr in a single-process world).
  Impl* impl() const { return impl_.get(); }

 private:
  World(launch::WorldEnv env, std::string backend, std::unique_ptr<Impl> impl, int cuda_index);
  /// Reduces `tensor` through the ranks' shared-memory segment where there is one and it can;
  /// false: it did not (Gloo does). `what` names it in errors.
  bool all_reduce_in_shared_memory(torch::Tensor& tensor, ReduceOp op, const char* what);

  launch::WorldEnv env_;
  std::string backend_;
  int cuda_index_ = 0;
  std::unique_ptr<Impl> impl_;
};

/// Rank 0's `text` on every rank (a collective; others pass anything). Throws runner::Error
/// when it is longer than 64 KiB.
std::string broadcast_text(World& world, const std::string& text);

/// Runs `io` (files, folders) on the main process alone and gives its outcome to every rank (a
/// collective): when it throws, every rank throws a runner::Error with its message and exit
/// code, so that all end with the same one line instead of waiting for a rank that left.
void on_main_process(World& world, const std::function<void()>& io);

/// The error text for a launch.gpu_ids list without an entry for this local rank.
std::string gpu_ids_too_short(const launch::WorldEnv& env, const std::vector<int>& gpu_ids);

/// Accelerate's gather_for_metrics: every rank calls it for each evaluation batch with its
/// `values` [B, ...] and `valid` [B] (bool, false for the sampler's wrap-around padding). Returns
/// on every rank all ranks' valid rows in dataset order [n, ...], for a sampler that gives rank r
/// positions r + W*i (unshuffled). Concatenating the results of all batches gives exactly one
/// row per sample in dataset order. Batch sizes may differ across ranks (a last, short batch).
torch::Tensor gather_for_metrics(World& world, const torch::Tensor& values,
                                 const torch::Tensor& valid);

/// The ordering rule alone: gathered [W, B, ...] and valid [W, B] -> valid rows of the
/// [B, W, ...] flattening. Exposed for tests.
torch::Tensor interleave_gathered(const torch::Tensor& gathered, const torch::Tensor& valid);

}  // namespace runner::dist
