#pragma once
// Adam and AdamW stepped by ATen's fused kernels (at::_fused_adam_ / at::_fused_adamw_, CPU and
// CUDA; what torch.optim.Adam(fused=True) runs): one pass over each tensor's parameter,
// gradient and moments instead of libtorch's ~8 elementwise passes, which on CPU are
// memory-bound (convnext_small: Adam's step 75 ms -> ~30 ms of a ~700 ms step, measured in
// Python). Results equal torch::optim::Adam/AdamW's within float rounding (the kernel orders the
// same arithmetic differently). State and serialisation are the base class's (AdamParamState:
// int64 step, exp_avg, exp_avg_sq, max_exp_avg_sq), so checkpoints are unchanged both ways.

#include <map>

#include <torch/torch.h>

namespace runner::optimizers {

/// torch::optim::Adam (decoupled = false: weight decay added to the gradient) or AdamW (true:
/// decoupled) with a fused step; amsgrad included.
template <class Base, class GroupOptions, class ParamState, bool decoupled>
class FusedAdam : public Base {
 public:
  using Base::Base;
  torch::Tensor step(torch::optim::Optimizer::LossClosure closure = nullptr) override;

 private:
  /// Each parameter's step count as the float32 tensor on its device that the kernel reads,
  /// advanced by one _foreach_add_ per step; rebuilt from the state's int64 count when they
  /// disagree (a loaded checkpoint).
  struct StepTensor {
    torch::Tensor tensor;
    int64_t value = -1;
  };
  std::map<const void*, StepTensor> step_tensors_;
};

using FusedAdamL2 =
    FusedAdam<torch::optim::Adam, torch::optim::AdamOptions, torch::optim::AdamParamState, false>;
using FusedAdamW =
    FusedAdam<torch::optim::AdamW, torch::optim::AdamWOptions, torch::optim::AdamWParamState, true>;

}  // namespace runner::optimizers
