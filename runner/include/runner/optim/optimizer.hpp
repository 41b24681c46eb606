#pragma once
// What an optimizer plugin returns (runner::optim::Optimizer) and helpers for writing one.

#include <string>
#include <unordered_set>
#include <vector>

#include <torch/torch.h>

namespace runner::optim {

/// Whether `name` matches `pattern`, where * stands for any run of characters.
inline bool name_matches(const std::string& name, const std::string& pattern) {
  size_t n = 0, p = 0, star = std::string::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == name[n] && pattern[p] != '*')) {
      ++n, ++p;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++, mark = n;
    } else if (star != std::string::npos) {
      p = star + 1, n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

/// Whether the parameter `name` (of `dim` dimensions) is in `exclude` (an optimizer's
/// weight_decay_exclude): "bias" takes every *bias, "norm" every parameter of at most one
/// dimension, another entry the names it matches (* for any characters).
inline bool excluded_from_decay(const std::string& name, int64_t dim,
                                const std::vector<std::string>& exclude) {
  for (const auto& entry : exclude) {
    if (entry == "norm" && dim <= 1) return true;
    if (entry == "bias" && name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0)
      return true;
    if (entry != "norm" && entry != "bias" && name_matches(name, entry)) return true;
  }
  return false;
}

/// The model's trainable parameters as optimizer groups: one group with `weight_decay`, and a
/// second with weight decay 0 for the parameters `exclude` names (weight_decay_exclude: with
/// {"bias", "norm"} the groups of timm's param_groups_weight_decay). `make_options(weight_decay)`
/// builds each group's options. Frozen parameters are left out and a parameter shared by two
/// modules appears once.
template <class Options, class MakeOptions>
std::vector<torch::optim::OptimizerParamGroup> parameter_groups(
    torch::nn::Module& model, double weight_decay, const std::vector<std::string>& exclude,
    MakeOptions make_options) {
  std::vector<torch::Tensor> decay, no_decay;
  std::unordered_set<const void*> seen;  // a tied weight listed under two names steps once
  for (auto& item : model.named_parameters()) {
    torch::Tensor& p = item.value();
    if (!p.requires_grad() || !seen.insert(p.unsafeGetTensorImpl()).second) continue;
    (excluded_from_decay(item.key(), p.dim(), exclude) ? no_decay : decay).push_back(p);
  }
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (!decay.empty())
    groups.emplace_back(decay, std::make_unique<Options>(make_options(weight_decay)));
  if (!no_decay.empty())
    groups.emplace_back(no_decay, std::make_unique<Options>(make_options(0.0)));
  return groups;
}

/// The same with `exempt_norm_and_bias` (plugin ABI 2's form): true is {"bias", "norm"}.
template <class Options, class MakeOptions>
std::vector<torch::optim::OptimizerParamGroup> parameter_groups(torch::nn::Module& model,
                                                                double weight_decay,
                                                                bool exempt_norm_and_bias,
                                                                MakeOptions make_options) {
  const std::vector<std::string> exclude =
      exempt_norm_and_bias ? std::vector<std::string>{"bias", "norm"} : std::vector<std::string>{};
  return parameter_groups<Options>(model, weight_decay, exclude, make_options);
}

/// An optimizer the engine steps without reading a device value on the host, so that the GPU
/// never waits for the CPU and a CUDA graph can capture the step: the learning rate and the loss
/// scaler's verdict arrive as device tensors, step counts stay on the device.
///
/// torch_optimizer() holds the parameter groups and the per-parameter state that checkpoints
/// keep (torch's own serialisation: a checkpoint written by a torch::optim optimizer loads).
/// A plugin built against an older interface (plugin ABI 1: factories returning
/// torch::optim::Optimizer) is refused when loaded.
class Optimizer {
 public:
  virtual ~Optimizer() = default;

  /// Parameter groups and state, for checkpoints, the loss scaler and the first lr.
  virtual torch::optim::Optimizer& torch_optimizer() = 0;

  /// One update of every parameter with a gradient.
  /// `lr`: this step's learning rate from the schedule, a 0-dim tensor on the parameters' device
  /// (float32 on CUDA, float64 on CPU); a group whose own lr differs from the first group's
  /// scales it by their ratio (the built-in optimizers' groups differ only in weight decay).
  /// `found_inf`: float32 on the device, > 0 when the fp16 loss scaler found an inf/NaN gradient:
  /// then nothing changes, step counts included; undefined when there is no loss scaling.
  virtual void update(const torch::Tensor& lr, const torch::Tensor& found_inf) = 0;

  /// Before torch_optimizer() is serialised: bring state kept on the device (step counts) into
  /// it. May read the device.
  virtual void state_to_host() {}
  /// After a checkpoint was loaded into torch_optimizer(): drop device copies of its state.
  virtual void state_from_host() {}
};

/// torch::optim::Optimizer::step for an optimizer whose step is `optimizer.update()`: evaluates
/// `closure` with grad mode on when there is one, then updates with each group's own lr, never
/// skipped. Returns the closure's loss (undefined without one).
inline torch::Tensor step_by_update(Optimizer& optimizer,
                                    const torch::optim::Optimizer::LossClosure& closure) {
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  optimizer.update({}, {});
  return loss;
}

/// The lr of `optimizer`'s first parameter group (0 when it has none): the schedule's base lr.
inline double first_group_lr(torch::optim::Optimizer& optimizer) {
  auto& groups = optimizer.param_groups();
  return groups.empty() ? 0.0 : groups.front().options().get_lr();
}

/// `lr` scaled for a group whose own lr is `group_lr` when the first group's is `first_lr`: the
/// same tensor when they are equal (no device op), else lr * group_lr / first_lr.
inline torch::Tensor group_lr_tensor(const torch::Tensor& lr, double group_lr, double first_lr) {
  if (group_lr == first_lr || first_lr == 0) return lr;
  return lr * (group_lr / first_lr);
}

}  // namespace runner::optim
