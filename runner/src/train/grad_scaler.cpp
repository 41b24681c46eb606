#include "train/grad_scaler.hpp"

#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "runner/error.hpp"

namespace runner::train {

GradScaler::GradScaler(GradScalerOptions options, AllReduceMax all_reduce_max)
    : options_(options), all_reduce_max_(std::move(all_reduce_max)) {
  if (!(options_.init_scale > 0) || !(options_.growth_factor > 1) ||
      !(options_.backoff_factor > 0 && options_.backoff_factor < 1) ||
      options_.growth_interval < 1) {
    throw Error(
        "loss scaler: need init_scale > 0, growth_factor > 1, 0 < backoff_factor < 1 and "
        "growth_interval >= 1");
  }
  scale_ = torch::full({1}, static_cast<float>(options_.init_scale), torch::kFloat);
  growth_tracker_ = torch::zeros({1}, torch::kInt);
}

void GradScaler::place_on(const torch::Device& device) const {
  if (scale_.device() == device) return;
  scale_ = scale_.to(device);
  growth_tracker_ = growth_tracker_.to(device);
}

double GradScaler::scale() const { return options_.enabled ? scale_.item<float>() : 1.0; }

torch::Tensor GradScaler::scale_tensor() const {
  return options_.enabled ? scale_ : torch::ones({1}, scale_.options());
}

torch::Tensor GradScaler::scale(const torch::Tensor& loss) const {
  if (!options_.enabled) return loss;
  place_on(loss.device());
  // An fp16 loss times 65536 overflows fp16; torch's float32 scale tensor promotes, so do we.
  torch::Tensor wide = loss.scalar_type() == torch::kHalf || loss.scalar_type() == torch::kBFloat16
                           ? loss.to(torch::kFloat)
                           : loss;
  return wide * scale_.squeeze(0);  // a 0-dim view: the loss keeps its shape
}

torch::Tensor GradScaler::unscale_(torch::optim::Optimizer& optimizer) {
  if (!options_.enabled) return {};
  PerOptimizer& state = per_optimizer_[&optimizer];
  if (state.unscaled) return state.found_inf;

  // Group by (device, dtype) as torch does: the fused kernel wants uniform lists.
  std::map<std::tuple<std::string, int>, std::vector<torch::Tensor>> groups;
  for (auto& group : optimizer.param_groups()) {
    for (auto& param : group.params()) {
      torch::Tensor grad = param.grad();
      if (!grad.defined()) continue;
      if (grad.is_sparse()) grad = grad.coalesce()._values();
      groups[{grad.device().str(), static_cast<int>(grad.scalar_type())}].push_back(grad);
    }
  }

  torch::Tensor found;  // on the scale's device
  for (auto& entry : groups) {
    std::vector<torch::Tensor>& grads = entry.second;
    const torch::Device device = grads.front().device();
    place_on(device);
    // torch computes 1/scale in double, then rounds to float32.
    const torch::Tensor inv_scale = scale_.to(torch::kDouble).reciprocal().to(torch::kFloat);
    torch::Tensor group_found = torch::zeros({1}, inv_scale.options());
    at::_amp_foreach_non_finite_check_and_unscale_(grads, group_found, inv_scale);
    found = found.defined() ? torch::maximum(found, group_found.to(found.device())) : group_found;
  }
  if (!found.defined()) found = torch::zeros({1}, scale_.options());
  if (all_reduce_max_) all_reduce_max_(found);

  state.unscaled = true;
  state.found_inf = found;
  return found;
}

void GradScaler::update() {
  if (!options_.enabled) return;
  if (per_optimizer_.empty())
    throw std::logic_error("GradScaler::update() called without unscale_() before it");
  torch::Tensor found;
  for (const auto& entry : per_optimizer_) {
    const torch::Tensor& f = entry.second.found_inf.to(scale_.device());
    found = found.defined() ? torch::maximum(found, f) : f;
  }
  per_optimizer_.clear();
  // Back off on inf/NaN, else count a good step and grow after growth_interval of them (only
  // to a finite scale): torch's rule, by torch's kernel, on the device.
  at::_amp_update_scale_(scale_, growth_tracker_, found, options_.growth_factor,
                         options_.backoff_factor, options_.growth_interval);
}

GradScalerState GradScaler::state() const {
  return {scale_.item<float>(), growth_tracker_.item<int>()};
}

void GradScaler::load_state(const GradScalerState& state) {
  if (!(state.scale > 0) || !std::isfinite(state.scale) || state.growth_tracker < 0) {
    throw DataError("checkpoint: loss scaler state has scale " + std::to_string(state.scale) +
                    " and growth tracker " + std::to_string(state.growth_tracker) +
                    "; expected a positive finite scale: the checkpoint is damaged");
  }
  scale_.fill_(static_cast<float>(state.scale));
  growth_tracker_.fill_(static_cast<int>(state.growth_tracker));
  per_optimizer_.clear();
}

}  // namespace runner::train
