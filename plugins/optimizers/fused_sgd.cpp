#include "optimizers/fused_sgd.hpp"

#include <optional>
#include <vector>

#include "optimizers/state_key.hpp"

namespace runner::optim {

torch::Tensor FusedSgd::step(torch::optim::Optimizer::LossClosure closure) {
  return step_by_update(*this, closure);
}

void FusedSgd::update(const torch::Tensor& lr, const torch::Tensor& found_inf) {
  torch::NoGradGuard no_grad;
  const double first_lr = optim::first_group_lr(*this);
  const std::optional<torch::Tensor> skip =
      found_inf.defined() ? std::optional<torch::Tensor>(found_inf) : std::nullopt;
  for (auto& group : param_groups()) {
    const auto& options = static_cast<torch::optim::SGDOptions&>(group.options());
    const bool momentum = options.momentum() != 0;
    // The kernel starts every buffer of a call from its gradient when is_first_step is set, so
    // parameters stepping for the first time go in a call of their own.
    struct Call {
      std::vector<torch::Tensor> params, grads, buffers;
    } first, later;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      TORCH_CHECK(!p.grad().is_sparse(), "SGD does not support sparse gradients");
      Call* call = &later;
      if (momentum) {
        auto& slot = state_[state_key(state_, p)];
        if (!slot) {  // zeros, not empty: a step the loss scaler skips leaves them as they are
          auto state = std::make_unique<torch::optim::SGDParamState>();
          state->momentum_buffer(torch::zeros_like(p, torch::MemoryFormat::Preserve));
          slot = std::move(state);
          call = &first;
        }
        call->buffers.push_back(static_cast<torch::optim::SGDParamState&>(*slot).momentum_buffer());
      }
      call->params.push_back(p);
      call->grads.push_back(p.grad());
    }
    for (Call* call : {&first, &later}) {
      if (call->params.empty()) continue;
      const bool is_first_step = momentum && call == &first;
      if (lr.defined()) {
        at::_fused_sgd_(call->params, call->grads, call->buffers, options.weight_decay(),
                        options.momentum(), optim::group_lr_tensor(lr, options.lr(), first_lr),
                        options.dampening(), options.nesterov(), /*maximize=*/false, is_first_step,
                        /*grad_scale=*/std::nullopt, skip);
      } else {
        at::_fused_sgd_(call->params, call->grads, call->buffers, options.weight_decay(),
                        options.momentum(), options.lr(), options.dampening(), options.nesterov(),
                        /*maximize=*/false, is_first_step, /*grad_scale=*/std::nullopt, skip);
      }
    }
  }
}

}  // namespace runner::optim
