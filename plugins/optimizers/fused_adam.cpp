#include "optimizers/fused_adam.hpp"

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "optimizers/state_key.hpp"

namespace runner::optim {
namespace {

// One fused call's tensors: the kernel wants one device and dtype per call.
struct FusedLists {
  std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps;
};

}  // namespace

template <class Base, class GroupOptions, class ParamState, bool decoupled>
torch::Tensor FusedAdam<Base, GroupOptions, ParamState, decoupled>::step(
    torch::optim::Optimizer::LossClosure closure) {
  return step_by_update(*this, closure);
}

template <class Base, class GroupOptions, class ParamState, bool decoupled>
void FusedAdam<Base, GroupOptions, ParamState, decoupled>::update(const torch::Tensor& lr,
                                                                  const torch::Tensor& found_inf) {
  torch::NoGradGuard no_grad;
  const double first_lr = optim::first_group_lr(*this);
  const std::optional<torch::Tensor> skip =
      found_inf.defined() ? std::optional<torch::Tensor>(found_inf) : std::nullopt;
  // Every step count advances by one, or by none on a step the loss scaler skips.
  std::map<std::string, torch::Tensor> increments;  // per device
  for (auto& group : this->param_groups()) {
    const auto& options = static_cast<GroupOptions&>(group.options());
    const bool amsgrad = options.amsgrad();
    std::map<std::tuple<std::string, int>, FusedLists> lists;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      TORCH_CHECK(!p.grad().is_sparse(), "Adam does not support sparse gradients");
      auto& slot = this->state_[state_key(this->state_, p)];
      if (!slot) {  // as the base class initialises it
        auto state = std::make_unique<ParamState>();
        state->step(0);
        state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        if (amsgrad) state->max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        slot = std::move(state);
      }
      auto& state = static_cast<ParamState&>(*slot);
      if (amsgrad && !state.max_exp_avg_sq().defined())
        state.max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      FusedLists& l = lists[{p.device().str(), static_cast<int>(p.scalar_type())}];
      l.params.push_back(p);
      l.grads.push_back(p.grad());
      l.exp_avgs.push_back(state.exp_avg());
      l.exp_avg_sqs.push_back(state.exp_avg_sq());
      if (amsgrad) l.max_exp_avg_sqs.push_back(state.max_exp_avg_sq());
      torch::Tensor& count = step_counts_[p.unsafeGetTensorImpl()];
      if (!count.defined() || count.device() != p.device())  // first step, or after a load
        count = torch::full({}, static_cast<double>(state.step()),
                            torch::TensorOptions().dtype(torch::kFloat).device(p.device()));
      l.steps.push_back(count);
    }
    const double beta1 = std::get<0>(options.betas());
    const double beta2 = std::get<1>(options.betas());
    for (auto& [key, l] : lists) {
      // The kernel reads the count of the step it takes: one more, or the same on a step the
      // loss scaler skips (the kernel then changes nothing), as torch's fused Adam counts.
      const torch::Device device = l.params.front().device();
      torch::Tensor& increment = increments[device.str()];
      if (!increment.defined())
        increment =
            skip ? (1.0f - skip->to(device).reshape(at::IntArrayRef{})).to(torch::kFloat)
                 : torch::ones({}, torch::TensorOptions().dtype(torch::kFloat).device(device));
      at::_foreach_add_(l.steps, increment);
      const torch::Tensor group_lr =
          lr.defined() ? optim::group_lr_tensor(lr, options.lr(), first_lr) : torch::Tensor();
      if constexpr (decoupled) {
        if (group_lr.defined())
          at::_fused_adamw_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs,
                            l.steps, group_lr, beta1, beta2, options.weight_decay(), options.eps(),
                            amsgrad, /*maximize=*/false, std::nullopt, skip);
        else
          at::_fused_adamw_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs,
                            l.steps, options.lr(), beta1, beta2, options.weight_decay(),
                            options.eps(), amsgrad, /*maximize=*/false, std::nullopt, skip);
      } else {
        if (group_lr.defined())
          at::_fused_adam_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs, l.steps,
                           group_lr, beta1, beta2, options.weight_decay(), options.eps(), amsgrad,
                           /*maximize=*/false, std::nullopt, skip);
        else
          at::_fused_adam_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs, l.steps,
                           options.lr(), beta1, beta2, options.weight_decay(), options.eps(),
                           amsgrad, /*maximize=*/false, std::nullopt, skip);
      }
    }
  }
}

template <class Base, class GroupOptions, class ParamState, bool decoupled>
void FusedAdam<Base, GroupOptions, ParamState, decoupled>::state_to_host() {
  std::vector<ParamState*> states;
  std::vector<torch::Tensor> counts;
  for (auto& group : this->param_groups()) {
    for (auto& p : group.params()) {
      const auto count = step_counts_.find(p.unsafeGetTensorImpl());
      const auto state = this->state_.find(state_key(this->state_, p));
      if (count == step_counts_.end() || state == this->state_.end() || !state->second) continue;
      states.push_back(&static_cast<ParamState&>(*state->second));
      counts.push_back(count->second);
    }
  }
  if (counts.empty()) return;
  // One read, not one per tensor (a model lives on one device).
  const torch::Tensor values = torch::stack(counts).to(torch::kCPU, torch::kDouble);
  const auto v = values.accessor<double, 1>();
  for (size_t i = 0; i < states.size(); ++i)
    states[i]->step(static_cast<int64_t>(std::llround(v[static_cast<int64_t>(i)])));
}

template class FusedAdam<torch::optim::Adam, torch::optim::AdamOptions,
                         torch::optim::AdamParamState, false>;
template class FusedAdam<torch::optim::AdamW, torch::optim::AdamWOptions,
                         torch::optim::AdamWParamState, true>;

}  // namespace runner::optim
