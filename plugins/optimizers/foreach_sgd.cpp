#include "optimizers/foreach_sgd.hpp"

#include <vector>

namespace runner::optimizers {

torch::Tensor ForeachSgd::step(torch::optim::Optimizer::LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss = {};
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups()) {
    const auto& options = static_cast<torch::optim::SGDOptions&>(group.options());
    std::vector<torch::Tensor> params, grads, buffers;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      params.push_back(p);
      grads.push_back(p.grad());
    }
    if (params.empty()) continue;
    if (options.weight_decay() != 0)
      grads = at::_foreach_add(grads, params, options.weight_decay());
    if (options.momentum() != 0) {
      std::vector<torch::Tensor> old_buffers, old_grads;
      for (size_t i = 0; i < params.size(); ++i) {
        auto& slot = state_[params[i].unsafeGetTensorImpl()];
        if (!slot) {  // the first step: the buffer is the gradient itself, as torch starts it
          auto state = std::make_unique<torch::optim::SGDParamState>();
          state->momentum_buffer(torch::clone(grads[i]).detach());
          buffers.push_back(state->momentum_buffer());
          slot = std::move(state);
          continue;
        }
        auto& buffer = static_cast<torch::optim::SGDParamState&>(*slot).momentum_buffer();
        old_buffers.push_back(buffer);
        old_grads.push_back(grads[i]);
        buffers.push_back(buffer);
      }
      if (!old_buffers.empty()) {
        at::_foreach_mul_(old_buffers, options.momentum());
        at::_foreach_add_(old_buffers, old_grads, 1 - options.dampening());
      }
      if (options.nesterov())
        grads = at::_foreach_add(grads, buffers, options.momentum());
      else
        grads = buffers;
    }
    at::_foreach_add_(params, grads, -options.lr());
  }
  return loss;
}

}  // namespace runner::optimizers
