#include "optimizers/fused_adam.hpp"

#include <map>
#include <sstream>
#include <string>
#include <tuple>
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

// One fused call's tensors: the kernel wants one device and dtype per call.
struct FusedLists {
  std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps;
};

}  // namespace

template <class Base, class GroupOptions, class ParamState, bool decoupled>
torch::Tensor FusedAdam<Base, GroupOptions, ParamState, decoupled>::step(
    torch::optim::Optimizer::LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss = {};
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
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
      state.step(state.step() + 1);
      FusedLists& l = lists[{p.device().str(), static_cast<int>(p.scalar_type())}];
      l.params.push_back(p);
      l.grads.push_back(p.grad());
      l.exp_avgs.push_back(state.exp_avg());
      l.exp_avg_sqs.push_back(state.exp_avg_sq());
      if (amsgrad) l.max_exp_avg_sqs.push_back(state.max_exp_avg_sq());
      StepTensor& count = step_tensors_[p.unsafeGetTensorImpl()];
      if (!count.tensor.defined() || count.value != state.step() - 1 ||
          count.tensor.device() != p.device())
        count.tensor = torch::full({}, static_cast<double>(state.step() - 1),
                                   torch::TensorOptions().dtype(torch::kFloat).device(p.device()));
      count.value = state.step();
      l.steps.push_back(count.tensor);
    }
    const double beta1 = std::get<0>(options.betas());
    const double beta2 = std::get<1>(options.betas());
    for (auto& [key, l] : lists) {
      at::_foreach_add_(l.steps, 1);  // the kernel reads the count of the step it takes
      if constexpr (decoupled) {
        at::_fused_adamw_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs, l.steps,
                          options.lr(), beta1, beta2, options.weight_decay(), options.eps(),
                          amsgrad, /*maximize=*/false);
      } else {
        at::_fused_adam_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs, l.steps,
                         options.lr(), beta1, beta2, options.weight_decay(), options.eps(), amsgrad,
                         /*maximize=*/false);
      }
    }
  }
  return loss;
}

template class FusedAdam<torch::optim::Adam, torch::optim::AdamOptions,
                         torch::optim::AdamParamState, false>;
template class FusedAdam<torch::optim::AdamW, torch::optim::AdamWOptions,
                         torch::optim::AdamWParamState, true>;

}  // namespace runner::optimizers
