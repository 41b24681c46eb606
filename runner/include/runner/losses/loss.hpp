#pragma once
// What a loss plugin provides.

#include <torch/torch.h>

namespace runner::losses {

class Loss {
 public:
  virtual ~Loss() = default;
  /// Mean loss of `logits` [N, C] against integer `targets` [N].
  virtual torch::Tensor compute(const torch::Tensor& logits, const torch::Tensor& targets) = 0;
};

}  // namespace runner::losses
