#include "optimizers/multi_tensor_adam.hpp"

#include <cmath>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace runner::optimizers {
namespace {

// The optimizer's state key for a parameter: libtorch 1.13 keys by the TensorImpl address
// printed as text, 2.x by the address itself.
template <class Map>
typename Map::key_type state_key(const Map&, const torch::Tensor& p) {
  if constexpr (std::is_same_v<typename Map::key_type, std::string>) {
    std::ostringstream text;
    text << p.unsafeGetTensorImpl();
    return text.str();
  } else {
    return static_cast<typename Map::key_type>(p.unsafeGetTensorImpl());
  }
}

}  // namespace

template <class Base, class GroupOptions, class ParamState, bool decoupled>
torch::Tensor MultiTensorAdam<Base, GroupOptions, ParamState, decoupled>::step(
    torch::optim::Optimizer::LossClosure closure) {
  for (auto& group : this->param_groups()) {
    if (static_cast<GroupOptions&>(group.options()).amsgrad()) return Base::step(closure);
  }
  torch::NoGradGuard no_grad;
  torch::Tensor loss = {};
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : this->param_groups()) {
    const auto& options = static_cast<GroupOptions&>(group.options());
    const double beta1 = std::get<0>(options.betas());
    const double beta2 = std::get<1>(options.betas());
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs;
    std::vector<c10::Scalar> bias_correction2_sqrts, negative_step_sizes;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      TORCH_CHECK(!p.grad().is_sparse(), "Adam does not support sparse gradients");
      auto& slot = this->state_[state_key(this->state_, p)];
      if (!slot) {  // as the base class initialises it
        auto state = std::make_unique<ParamState>();
        state->step(0);
        state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        slot = std::move(state);
      }
      auto& state = static_cast<ParamState&>(*slot);
      state.step(state.step() + 1);
      const double bias_correction1 = 1 - std::pow(beta1, state.step());
      const double bias_correction2 = 1 - std::pow(beta2, state.step());
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(state.exp_avg());
      exp_avg_sqs.push_back(state.exp_avg_sq());
      bias_correction2_sqrts.emplace_back(std::sqrt(bias_correction2));
      negative_step_sizes.emplace_back(-options.lr() / bias_correction1);
    }
    if (params.empty()) continue;
    if (options.weight_decay() != 0) {
      if constexpr (decoupled) {
        at::_foreach_mul_(params, 1 - options.lr() * options.weight_decay());
      } else {
        grads = at::_foreach_add(grads, params, options.weight_decay());
      }
    }
    at::_foreach_mul_(exp_avgs, beta1);
    at::_foreach_add_(exp_avgs, grads, 1 - beta1);
    at::_foreach_mul_(exp_avg_sqs, beta2);
    at::_foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2);
    auto denominators = at::_foreach_sqrt(exp_avg_sqs);
    at::_foreach_div_(denominators, bias_correction2_sqrts);
    at::_foreach_add_(denominators, options.eps());
    at::_foreach_addcdiv_(params, exp_avgs, denominators, negative_step_sizes);
  }
  return loss;
}

template class MultiTensorAdam<torch::optim::Adam, torch::optim::AdamOptions,
                               torch::optim::AdamParamState, false>;
template class MultiTensorAdam<torch::optim::AdamW, torch::optim::AdamWOptions,
                               torch::optim::AdamWParamState, true>;

}  // namespace runner::optimizers
