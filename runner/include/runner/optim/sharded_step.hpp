#pragma once
// The sharded optimizer step of CPU ranks on one host (ZeRO stage 1; dist/DataParallel): the
// ranks keep one copy of the parameters and of the optimizer's state in shared memory, and after
// averaging the gradient each rank steps only the elements it owns. An optimizer that can step
// element ranges implements ShardedStep beside optim::Optimizer; the engine finds it by
// dynamic_cast, so a plugin built before this header keeps its whole step.

#include <cstdint>
#include <utility>

#include <torch/types.h>

namespace runner::optim {

/// What a rank owns in this step, and where the shared state lives (DataParallel answers).
class ParameterShards {
 public:
  virtual ~ParameterShards() = default;
  /// The elements [first, second) of `param`, in its memory order, this rank steps now; the
  /// same split on no two ranks, every element on one. Empty when another rank steps it all.
  virtual std::pair<int64_t, int64_t> owned(const torch::Tensor& param) const = 0;
  /// State tensor number `slot` (0 .. state_slots() - 1) of `param`, shaped and laid out as
  /// `param`, in memory every rank of the host maps: zeros until a rank steps it.
  virtual torch::Tensor shared_state(const torch::Tensor& param, int slot) const = 0;
};

class ShardedStep {
 public:
  virtual ~ShardedStep() = default;
  /// Tensors shaped as a parameter this optimizer keeps per parameter (Adam: 2, amsgrad 3).
  virtual int state_slots() const = 0;
  /// Called once, before the first update(): from then on update() steps what `shards` says
  /// this rank owns, with its state in `shards`' memory (state it holds already, from a
  /// checkpoint, is moved there by each rank for the elements it owns, as it steps them).
  virtual void step_shards(const ParameterShards* shards) = 0;
};

}  // namespace runner::optim
