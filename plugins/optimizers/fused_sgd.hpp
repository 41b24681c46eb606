#pragma once
// SGD stepped by ATen's fused kernel (at::_fused_sgd_, CPU and CUDA; what
// torch.optim.SGD(fused=True) runs): one pass over each parameter, gradient and momentum buffer,
// reading the learning rate and the loss scaler's verdict from device tensors. Results equal
// torch::optim::SGD's within float rounding (the kernel orders the arithmetic differently);
// state and serialisation are the base class's (SGDParamState), so checkpoints are unchanged.
//
// One difference from torch: a momentum buffer starts as the first gradient, as torch's does,
// unless the loss scaler skipped that first step; it then starts at zero, so the next step's
// buffer is (1 - dampening) x gradient (equal to torch's with the default dampening 0).

#include <torch/torch.h>

#include "runner/optim/optimizer.hpp"

namespace runner::optim {

class FusedSgd : public torch::optim::SGD, public optim::Optimizer {
 public:
  using torch::optim::SGD::SGD;

  torch::optim::Optimizer& torch_optimizer() override { return *this; }
  /// `lr` undefined (torch's step()): each group's own lr as a number.
  void update(const torch::Tensor& lr, const torch::Tensor& found_inf) override;
  /// torch's step(): update() with the groups' own lr, never skipped.
  torch::Tensor step(torch::optim::Optimizer::LossClosure closure = nullptr) override;
};

}  // namespace runner::optim
