#include "runner/models/grad_checkpoint.hpp"

#include <mutex>

#include <ATen/autocast_mode.h>

namespace runner::models {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

at::Generator generator_of(const torch::Device& device) {
  return at::globalContext().defaultGenerator(device);
}

class CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               torch::TensorList params, torch::TensorList buffers,
                               const CheckpointBody* body) {
    // What the recompute must see again: the generator of the input's device and autocast.
    {
      at::Generator generator = generator_of(x.device());
      std::lock_guard<std::mutex> lock(generator.mutex());
      ctx->saved_data["rng"] = generator.get_state();
    }
    ctx->saved_data["autocast"] = at::autocast::is_autocast_enabled(x.device().type());
    ctx->saved_data["autocast_dtype"] =
        static_cast<int64_t>(at::autocast::get_autocast_dtype(x.device().type()));
    ctx->saved_data["body"] = reinterpret_cast<int64_t>(body);
    ctx->saved_data["params"] = static_cast<int64_t>(params.size());
    // Buffers change in place in the forward (running statistics): kept without version checks.
    ctx->saved_data["buffers"] = buffers.vec();
    ctx->saved_data["x_grad"] = x.requires_grad();
    variable_list saved = {x};
    saved.insert(saved.end(), params.begin(), params.end());
    ctx->save_for_backward(saved);
    return (*body)(x);  // autograd is off inside a Function's forward: nothing is kept
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto* body = reinterpret_cast<const CheckpointBody*>(ctx->saved_data["body"].toInt());
    const bool autocast = ctx->saved_data["autocast"].toBool();
    const auto autocast_dtype =
        static_cast<at::ScalarType>(ctx->saved_data["autocast_dtype"].toInt());
    const int64_t n_params = ctx->saved_data["params"].toInt();
    const variable_list saved = ctx->get_saved_variables();
    torch::Tensor x = saved[0].detach();
    x.requires_grad_(ctx->saved_data["x_grad"].toBool());
    const variable_list params(saved.begin() + 1, saved.begin() + 1 + n_params);
    const std::vector<torch::Tensor> buffers = ctx->saved_data["buffers"].toTensorVector();

    // Recompute as the forward ran: its random draws and autocast; the buffers as they are now.
    std::vector<torch::Tensor> kept_buffers;
    for (const auto& b : buffers) kept_buffers.push_back(b.clone());
    const c10::DeviceType type = x.device().type();
    const bool autocast_was = at::autocast::is_autocast_enabled(type);
    const at::ScalarType dtype_was = at::autocast::get_autocast_dtype(type);
    at::Generator generator = generator_of(x.device());
    torch::Tensor rng_now;
    torch::Tensor out;
    {
      std::lock_guard<std::mutex> lock(generator.mutex());
      rng_now = generator.get_state();
      generator.set_state(ctx->saved_data["rng"].toTensor());
    }
    at::autocast::set_autocast_dtype(type, autocast_dtype);
    at::autocast::set_autocast_enabled(type, autocast);
    try {
      torch::AutoGradMode grad_on(true);
      out = (*body)(x);
    } catch (...) {
      at::autocast::set_autocast_enabled(type, autocast_was);
      at::autocast::set_autocast_dtype(type, dtype_was);
      throw;
    }
    at::autocast::set_autocast_enabled(type, autocast_was);
    at::autocast::set_autocast_dtype(type, dtype_was);
    if (!autocast_was) at::autocast::clear_cache();
    {
      std::lock_guard<std::mutex> lock(generator.mutex());
      generator.set_state(rng_now);
    }

    // The gradients of the input and of every parameter that trains (frozen ones get none).
    variable_list wanted;
    std::vector<int64_t> slot;  // wanted[k] is forward input slot[k]
    if (x.requires_grad()) wanted.push_back(x), slot.push_back(0);
    for (int64_t i = 0; i < n_params; ++i)
      if (params[static_cast<size_t>(i)].requires_grad())
        wanted.push_back(params[static_cast<size_t>(i)]), slot.push_back(1 + i);
    // One slot per forward input: x, each parameter, each buffer, body.
    variable_list grads(static_cast<size_t>(1 + n_params + buffers.size() + 1));
    if (!wanted.empty() && out.requires_grad()) {
      const variable_list found = torch::autograd::grad({out}, wanted, {grad_outputs[0]},
                                                        /*retain_graph=*/false,
                                                        /*create_graph=*/false,
                                                        /*allow_unused=*/true);
      for (size_t k = 0; k < found.size(); ++k) grads[static_cast<size_t>(slot[k])] = found[k];
    }
    // The recompute's BatchNorm saved the running statistics for its backward: they go back
    // to their values only now.
    out = torch::Tensor();
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(kept_buffers[i]);
    return grads;
  }
};

}  // namespace

torch::Tensor checkpoint(const CheckpointBody& body, const torch::Tensor& x,
                         const std::vector<torch::Tensor>& params,
                         const std::vector<torch::Tensor>& buffers) {
  return CheckpointFunction::apply(x, torch::TensorList(params), torch::TensorList(buffers), &body);
}

}  // namespace runner::models
