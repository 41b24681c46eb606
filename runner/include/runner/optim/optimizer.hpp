#pragma once
// Helpers for optimizer plugins.

#include <unordered_set>
#include <vector>

#include <torch/torch.h>

namespace runner::optim {

/// The model's trainable parameters as optimizer groups: one group with `weight_decay`, and,
/// when `exempt_norm_and_bias`, a second group with weight decay 0 for biases and the
/// parameters of normalisation layers (every 1-d parameter, as timm's param_groups_weight_decay).
/// `make_options(weight_decay)` builds each group's options. Frozen parameters are left out
/// and a parameter shared by two modules appears once.
template <class Options, class MakeOptions>
std::vector<torch::optim::OptimizerParamGroup> parameter_groups(torch::nn::Module& model,
                                                                double weight_decay,
                                                                bool exempt_norm_and_bias,
                                                                MakeOptions make_options) {
  std::vector<torch::Tensor> decay, no_decay;
  std::unordered_set<const void*> seen;  // a tied weight listed under two names steps once
  for (auto& p : model.parameters()) {
    if (!p.requires_grad() || !seen.insert(p.unsafeGetTensorImpl()).second) continue;
    (exempt_norm_and_bias && p.dim() <= 1 ? no_decay : decay).push_back(p);
  }
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (!decay.empty())
    groups.emplace_back(decay, std::make_unique<Options>(make_options(weight_decay)));
  if (!no_decay.empty())
    groups.emplace_back(no_decay, std::make_unique<Options>(make_options(0.0)));
  return groups;
}

/// Sets the lr of every parameter group of `optimizer` (the engine's scheduler step; the
/// built-in optimizers' groups differ only in weight decay, so they share one lr).
inline void set_lr(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

/// The lr of `optimizer`'s first parameter group (0 when it has none).
inline double current_lr(torch::optim::Optimizer& optimizer) {
  auto& groups = optimizer.param_groups();
  return groups.empty() ? 0.0 : groups.front().options().get_lr();
}

}  // namespace runner::optim
