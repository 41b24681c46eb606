#pragma once
// What a loss plugin provides.

#include <torch/torch.h>

namespace runner::losses {

class Loss {
 public:
  virtual ~Loss() = default;
  /// Mean loss of `logits` [N, C] against integer `targets` [N] (class indices), or, for a
  /// loss that is also a TakesSoftTargets, float `targets` [N, C] (class probabilities).
  virtual torch::Tensor compute(const torch::Tensor& logits, const torch::Tensor& targets) = 0;
};

/// Implemented beside Loss by a loss whose compute() also takes class probabilities [N, C]
/// (float) as targets: train.mixup trains with such soft targets and refuses a loss that is not
/// one. (A second base class, not a virtual of Loss: plugins built for ABI 2 keep working.)
class TakesSoftTargets {
 public:
  virtual ~TakesSoftTargets() = default;
};

/// Whether `loss` takes soft targets.
inline bool takes_soft_targets(const Loss& loss) {
  return dynamic_cast<const TakesSoftTargets*>(&loss) != nullptr;
}

}  // namespace runner::losses
