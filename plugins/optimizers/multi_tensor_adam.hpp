#pragma once
// Adam and AdamW stepping all tensors of a parameter group at once with ATen's multi-tensor
// (_foreach) ops. libtorch's C++ Adam updates one tensor at a time: ~10 kernel launches per
// parameter tensor on CUDA, ~3000 per step for convnext_small, where PyTorch 2.x's Adam
// (foreach by default on CUDA) launches a handful. On CPU the _foreach ops run the same
// per-tensor kernels in the same order, so the results are torch::optim::Adam's bit for bit.
// State and serialisation are the base class's (AdamParamState), so checkpoints are unchanged.

#include <torch/torch.h>

namespace runner::optimizers {

/// torch::optim::Adam (decoupled = false) or AdamW (true) with a multi-tensor step; amsgrad
/// falls back to the base class's per-tensor step.
template <class Base, class GroupOptions, class ParamState, bool decoupled>
class MultiTensorAdam : public Base {
 public:
  using Base::Base;
  torch::Tensor step(torch::optim::Optimizer::LossClosure closure = nullptr) override;
};

using MultiTensorAdamL2 = MultiTensorAdam<torch::optim::Adam, torch::optim::AdamOptions,
                                          torch::optim::AdamParamState, false>;
using MultiTensorAdamW = MultiTensorAdam<torch::optim::AdamW, torch::optim::AdamWOptions,
                                         torch::optim::AdamWParamState, true>;

}  // namespace runner::optimizers
