#include "engine/grad_scaler.hpp"

#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "runner/error.hpp"

namespace runner::engine {

namespace {

// torch keeps the scale in a float32 tensor: round the same way so both paths agree.
double as_float(double x) { return static_cast<double>(static_cast<float>(x)); }

}  // namespace

GradScaler::GradScaler(GradScalerOptions options, AllReduceMax all_reduce_max)
    : options_(options), all_reduce_max_(std::move(all_reduce_max)), scale_(options.init_scale) {
  if (!(options_.init_scale > 0) || !(options_.growth_factor > 1) ||
      !(options_.backoff_factor > 0 && options_.backoff_factor < 1) ||
      options_.growth_interval < 1) {
    throw Error(
        "loss scaler: need init_scale > 0, growth_factor > 1, 0 < backoff_factor < 1 and "
        "growth_interval >= 1");
  }
  scale_ = as_float(scale_);
}

torch::Tensor GradScaler::scale(const torch::Tensor& loss) const {
  if (!options_.enabled) return loss;
  // An fp16 loss times 65536 overflows fp16; torch's float32 scale tensor promotes, so do we.
  torch::Tensor wide = loss.scalar_type() == torch::kHalf || loss.scalar_type() == torch::kBFloat16
                           ? loss.to(torch::kFloat)
                           : loss;
  return wide * scale_;
}

void GradScaler::unscale_(torch::optim::Optimizer& optimizer) {
  if (!options_.enabled) return;
  PerOptimizer& state = per_optimizer_[&optimizer];
  if (state.unscaled) return;

  // Group by (device, dtype) as torch does: the fused CUDA kernel wants uniform lists.
  std::map<std::tuple<std::string, int>, std::vector<torch::Tensor>> groups;
  for (auto& group : optimizer.param_groups()) {
    for (auto& param : group.params()) {
      const torch::Tensor& grad = param.grad();
      if (!grad.defined()) continue;
      groups[{grad.device().str(), static_cast<int>(grad.scalar_type())}].push_back(grad);
    }
  }

  const float inv_scale = static_cast<float>(1.0 / scale_);
  torch::Tensor found;  // 1-element float32 on the first gradients' device
  bool on_cuda = false;
  for (auto& entry : groups) {
    std::vector<torch::Tensor>& grads = entry.second;
    const torch::Device device = grads.front().device();
    auto float_on_device = torch::TensorOptions().dtype(torch::kFloat).device(device);
    torch::Tensor group_found = torch::zeros({1}, float_on_device);
    if (device.is_cuda()) {
      on_cuda = true;
      at::_amp_foreach_non_finite_check_and_unscale_(grads, group_found,
                                                     torch::full({1}, inv_scale, float_on_device));
    } else {
      // libtorch 1.13 has the _amp_ kernels for CUDA only: the same work by hand.
      bool any_bad = false;
      for (auto& grad : grads) {
        const torch::Tensor values = grad.is_sparse() ? grad._values() : grad;
        if (!any_bad && !torch::isfinite(values).all().item<bool>()) any_bad = true;
        grad.mul_(inv_scale);
      }
      if (any_bad) group_found.fill_(1.0);
    }
    if (!found.defined())
      found = group_found;
    else
      found = torch::maximum(found, group_found.to(found.device()));
  }
  if (!found.defined()) found = torch::zeros({1}, torch::kFloat);
  if (all_reduce_max_) all_reduce_max_(found);

  state.unscaled = true;
  state.found_inf = found.item<float>() > 0;
  last_grads_on_cuda_ = on_cuda;
}

bool GradScaler::step(torch::optim::Optimizer& optimizer) {
  if (!options_.enabled) {
    optimizer.step();
    return true;
  }
  unscale_(optimizer);
  if (per_optimizer_[&optimizer].found_inf) return false;
  optimizer.step();
  return true;
}

void GradScaler::update() {
  if (!options_.enabled) return;
  if (per_optimizer_.empty())
    throw std::logic_error("GradScaler::update() called without step() or unscale_() before it");
  bool found_inf = false;
  for (const auto& entry : per_optimizer_) found_inf = found_inf || entry.second.found_inf;
  per_optimizer_.clear();

  if (last_grads_on_cuda_) {
    // On CUDA, torch's own kernel: same rule as below, kept for exact parity with torch.
    auto device = torch::Device(torch::kCUDA);
    torch::Tensor scale = torch::full({1}, static_cast<float>(scale_),
                                      torch::TensorOptions().dtype(torch::kFloat).device(device));
    torch::Tensor tracker = torch::full({1}, static_cast<int>(growth_tracker_),
                                        torch::TensorOptions().dtype(torch::kInt).device(device));
    torch::Tensor found = torch::full({1}, found_inf ? 1.0f : 0.0f, scale.options());
    at::_amp_update_scale_(scale, tracker, found, options_.growth_factor, options_.backoff_factor,
                           options_.growth_interval);
    scale_ = scale.item<float>();
    growth_tracker_ = tracker.item<int>();
    return;
  }

  if (found_inf) {
    scale_ = as_float(scale_ * options_.backoff_factor);
    growth_tracker_ = 0;
    return;
  }
  if (++growth_tracker_ == options_.growth_interval) {
    const double grown = as_float(scale_ * options_.growth_factor);
    if (std::isfinite(grown)) scale_ = grown;
    growth_tracker_ = 0;
  }
}

void GradScaler::load_state(const GradScalerState& state) {
  if (!(state.scale > 0) || !std::isfinite(state.scale) || state.growth_tracker < 0) {
    throw DataError("checkpoint: loss scaler state has scale " + std::to_string(state.scale) +
                    " and growth tracker " + std::to_string(state.growth_tracker) +
                    "; expected a positive finite scale: the checkpoint is damaged");
  }
  scale_ = as_float(state.scale);
  growth_tracker_ = state.growth_tracker;
  per_optimizer_.clear();
}

}  // namespace runner::engine
