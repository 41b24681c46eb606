#pragma once
// Data-parallel training over a World, driving PyTorch DDP's own engine (c10d::Reducer):
// gradients are averaged across ranks in buckets launched while backward still runs. The
// sharded step (CPU ranks of one host) goes without the reducer: after backward each rank
// averages only its share of every bucket, read straight from the gradients.
//
// Per training step (micro-batch):
//   dp.before_forward();                    // bucket rebuild + BatchNorm buffer sync
//   auto loss = compute_loss(model->forward(x));
//   dp.before_backward({loss}, sync);       // sync=false: no_sync (accumulate locally)
//   loss.backward();                        // all-reduce overlaps with this when sync
//   dp.after_backward();                    // the sharded step's exchange, when sync
//   if (sync) { optimizer.step(); dp.zero_grad(); }

#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "dist/world.hpp"

namespace runner::dist {

class SharedMemoryAllReduce;
}  // namespace runner::dist
namespace runner::optim {
class ParameterShards;
}  // namespace runner::optim
namespace runner::dist {

struct DataParallelOptions {
  double bucket_cap_mb = 25.0;          ///< gradient bucket size (PyTorch's default 25 MB)
  bool find_unused_parameters = false;  ///< tolerate parameters without a gradient in a step
  bool broadcast_buffers = true;        ///< copy rank 0's buffers (BatchNorm stats) each step
  bool match_gradient_layout = true;    ///< see match_gradient_layout (false: for benchmarks)
  /// The dtype gradients travel in: "fp32", or "fp16" / "bf16" (half the bytes). Through the
  /// process group as DDP's fp16_compress_hook / bf16_compress_hook (each bucket cast, divided by
  /// the world size, all-reduced and cast back); bf16 through shared memory as each rank's
  /// gradient rounded to bf16 once, averaged in float32, the mean rounded to bf16 once.
  std::string grad_comm = "fp32";
  /// How gradients travel: "auto" (through shared memory when every rank is a CPU process on
  /// one host and gradients go in fp32 or bf16, else the process group), "shared_memory"
  /// (required: an error where it cannot be used), "process_group" (Gloo or NCCL, as PyTorch's
  /// DDP).
  std::string grad_transport = "auto";
  /// The sharded step (runner/optim/sharded_step.hpp): the optimizer's state tensors per
  /// parameter (ShardedStep::state_slots()); 0: every rank steps every parameter. Set only where
  /// config::why_not_sharded allows it (fp32 gradients, not process_group); applies where the
  /// ranks join a shared-memory segment with room for it and every parameter is float32.
  int shard_state_slots = 0;
};

/// Makes `param`'s gradients arrive with `param`'s own strides where they differ only in
/// size-1 dimensions (a free relabelling), so that the reducer's buckets take them without a
/// copy. DataParallel does this for every parameter it averages.
void match_gradient_layout(torch::Tensor& param);

class DataParallel {
 public:
  /// Copies rank 0's parameters and buffers to every rank and hooks gradient averaging into
  /// autograd for `module`'s trainable parameters. In a single-process world it does nothing.
  DataParallel(std::shared_ptr<World> world, std::shared_ptr<torch::nn::Module> module,
               DataParallelOptions options = {});
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  /// Call before each training forward, on every rank.
  void before_forward();
  /// Call after forward, before backward, on every rank. sync=true: this backward averages
  /// gradients across ranks; false: gradients only accumulate locally (no_sync).
  void before_backward(const std::vector<torch::Tensor>& outputs, bool sync = true);
  /// Call right after each backward, on every rank: the sharded step averages each rank's share
  /// of the gradients here (the reducer does it during backward otherwise).
  void after_backward();
  /// Drops the gradients (torch's zero_grad(set_to_none=True)): the next window's first
  /// backward writes them afresh.
  void zero_grad();
  /// After parameters were frozen or thawed (requires_grad changed), between optimizer steps:
  /// averages the gradients of the trainable ones from now on. Every rank calls it.
  void trainable_changed();

  const DataParallelOptions& options() const { return options_; }
  /// Gradient buckets of the reducer as set up (by bucket_cap_mb); 0 in a one-process world.
  size_t bucket_count() const;
  /// What averages the gradients: "shared_memory", "gloo", "nccl", or "none" (one process).
  std::string transport() const;
  /// The sharded step's shares for the optimizer (ShardedStep::step_shards), or null where
  /// every rank steps every parameter.
  const optim::ParameterShards* shards() const;
  /// Why options().shard_state_slots did not give shards().
  std::string why_not_sharded() const;
  /// Call on every rank right after each optimizer step: with the sharded step, waits until
  /// every rank has stepped its share (EMA, checkpoints and the next forward read them all).
  void after_optimizer_step();

 private:
  /// The reducer over the trainable parameters, with its comm hook.
  void attach_reducer();
  /// The shared-memory all-reduce train.grad_transport asks for and this world allows, or null
  /// (the process group averages). Collective: every rank calls it.
  std::shared_ptr<SharedMemoryAllReduce> join_shared_memory(
      const std::vector<torch::Tensor>& params);
  /// The sharded step's arena bytes (0: not sharded, why_not_sharded() says why), and its
  /// placing of rank 0's parameters there, every rank's parameters then mapping that one copy.
  size_t arena_bytes();
  void share_parameters();
  /// The sharded step's buckets (`buckets`: indices into `params`) split into shares.
  void plan_shares(const std::vector<torch::Tensor>& params,
                   const std::vector<std::vector<size_t>>& buckets);
  std::vector<torch::Tensor> all_parameters() const;

  struct State;
  std::shared_ptr<World> world_;
  std::shared_ptr<torch::nn::Module> module_;
  DataParallelOptions options_;
  std::unique_ptr<State> state_;
};

}  // namespace runner::dist
