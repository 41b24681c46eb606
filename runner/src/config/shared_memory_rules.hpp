#pragma once
// When CPU ranks of one host can average gradients through shared memory
// (train.grad_transport) and step one shared copy of the model, each its share
// (train.shard_optimizer): the rules, asked by `runner validate` with what the config says and
// by each rank with what it runs, so that the two cannot drift apart. DataParallel adds only
// what a rank alone finds out: /dev/shm's room, the parameters' dtypes.

#include <string>

#include "config/experiment_options.hpp"

namespace runner::config {

struct SharedMemoryFacts {
  bool cpu_ranks = true;                   ///< the ranks train on CPUs (not launch.device cuda)
  int nodes = 1;                           ///< hosts the ranks span
  std::string grad_transport = "auto";     ///< train.grad_transport
  std::string grad_comm = "fp32";          ///< train.grad_comm
  Precision precision = Precision::kFp32;  ///< the step's
  std::string optimizer;                   ///< its name, for the reason ("": not known here)
  bool optimizer_steps_shares = false;     ///< it steps element ranges (optim::ShardedStep)
  bool clip_grad_norm = false;             ///< train.clip_grad_norm set
  bool ema = false;                        ///< train.ema on
};

/// Why the gradients cannot go through shared memory with these facts (the transport and
/// grad_comm ones aside from grad_transport itself), or "" when they can.
std::string why_no_shared_memory(const SharedMemoryFacts& facts);

/// Why every rank steps every parameter with these facts, or "" when the sharded step applies.
std::string why_not_sharded(const SharedMemoryFacts& facts);

}  // namespace runner::config
