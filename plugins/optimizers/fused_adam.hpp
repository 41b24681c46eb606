#pragma once
// Adam and AdamW stepped by ATen's fused kernels (at::_fused_adam_ / at::_fused_adamw_, CPU and
// CUDA; what torch.optim.Adam(fused=True) runs): one pass over each tensor's parameter,
// gradient and moments instead of libtorch's ~8 elementwise passes, which on CPU are
// memory-bound (convnext_small: Adam's step 75 ms -> ~30 ms of a ~700 ms step, measured in
// Python). The kernels read the learning rate, the step counts and the loss scaler's verdict
// from device tensors: a step needs no host read. Results equal torch::optim::Adam/AdamW's
// within float rounding (the kernel orders the same arithmetic differently). State and
// serialisation are the base class's (AdamParamState: int64 step, exp_avg, exp_avg_sq,
// max_exp_avg_sq), so checkpoints are unchanged both ways; the int64 step is brought up to date
// from the device before a save (state_to_host).
// Under CPU bf16 autocast, a weight the model reads as a kept bf16 copy
// (runner/models/compute_copies.hpp) is stepped by runner's kernel, which writes the copy in the
// same pass with ATen's arithmetic (adam_with_copy.hpp): the same bits, one pass fewer.

#include <map>

#include <torch/torch.h>

#include "runner/optim/optimizer.hpp"
#include "runner/optim/sharded_step.hpp"

namespace runner::optim {

/// torch::optim::Adam (decoupled = false: weight decay added to the gradient) or AdamW (true:
/// decoupled) with a fused step; amsgrad included.
template <class Base, class GroupOptions, class ParamState, bool decoupled>
class FusedAdam : public Base, public optim::Optimizer, public optim::ShardedStep {
 public:
  using Base::Base;

  int state_slots() const override;
  void step_shards(const ParameterShards* shards) override { shards_ = shards; }

  torch::optim::Optimizer& torch_optimizer() override { return *this; }
  /// `lr` undefined (torch's step()): each group's own lr as a number.
  void update(const torch::Tensor& lr, const torch::Tensor& found_inf) override;
  void state_to_host() override;
  void state_from_host() override { step_counts_.clear(); }
  /// torch's step(): update() with the groups' own lr, never skipped.
  torch::Tensor step(torch::optim::Optimizer::LossClosure closure = nullptr) override;

 private:
  /// Each parameter's step count as the float32 tensor on its device that the kernel reads (the
  /// truth while training; the state's int64 copy is written by state_to_host()).
  std::map<const void*, torch::Tensor> step_counts_;
  const ParameterShards* shards_ =
      nullptr;  ///< set: the sharded step (runner/optim/sharded_step.hpp)
};

using FusedAdamL2 =
    FusedAdam<torch::optim::Adam, torch::optim::AdamOptions, torch::optim::AdamParamState, false>;
using FusedAdamW =
    FusedAdam<torch::optim::AdamW, torch::optim::AdamWOptions, torch::optim::AdamWParamState, true>;

}  // namespace runner::optim
