#include "train/model_ema.hpp"

#include <algorithm>
#include <cmath>

namespace runner::train {

double ema_decay(const config::EmaOptions& options, int64_t updates) {
  const double step = std::max<int64_t>(0, updates - options.update_after_step - 1);
  if (step <= 0) return 0.0;
  if (!options.warmup) return options.decay;
  const double decay = 1.0 - std::pow(1.0 + step / options.warmup_gamma, -options.warmup_power);
  return std::max(std::min(decay, options.decay), options.min_decay);
}

ModelEma::Entries ModelEma::entries_of(torch::nn::Module& module) const {
  // timm lerps every floating-point state_dict entry (exclude_buffers: the parameters only) and
  // copies the rest. Parameters and buffers in the module's own order, the same for the average.
  Entries e;
  for (auto& p : module.parameters()) (p.is_floating_point() ? e.averaged : e.copied).push_back(p);
  for (auto& b : module.buffers())
    (b.is_floating_point() && !options_.exclude_buffers ? e.averaged : e.copied).push_back(b);
  return e;
}

ModelEma::ModelEma(torch::nn::Module& model, const config::EmaOptions& options)
    : options_(options), device_(torch::kCPU) {
  torch::NoGradGuard no_grad;
  const Entries of_model = entries_of(model);
  const auto copy = [&](const torch::Tensor& t) {
    return options_.device == "cpu"
               ? t.detach().to(torch::kCPU, t.scalar_type(), /*non_blocking=*/false, /*copy=*/true)
               : t.detach().clone();
  };
  for (const auto& t : of_model.averaged) ema_.averaged.push_back(copy(t));
  for (const auto& t : of_model.copied) ema_.copied.push_back(copy(t));
  if (!ema_.averaged.empty()) device_ = ema_.averaged.front().device();
  // One foreach lerp per dtype: the entries grouped once.
  std::map<c10::ScalarType, size_t> group_of;
  for (size_t i = 0; i < ema_.averaged.size(); ++i) {
    const auto dtype = ema_.averaged[i].scalar_type();
    if (!group_of.count(dtype)) {
      group_of[dtype] = lerp_groups_.size();
      lerp_groups_.push_back({dtype, {}, {}});
    }
    auto& group = lerp_groups_[group_of[dtype]];
    group.indices.push_back(i);
    group.averaged.push_back(ema_.averaged[i]);
  }
  updates_ = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device_));
}

void ModelEma::set_updates(int64_t updates) { updates_.fill_(static_cast<double>(updates)); }

int64_t ModelEma::updates() const { return static_cast<int64_t>(updates_.item<double>()); }

void ModelEma::update(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  Entries of_model = entries_of(model);
  if (options_.device == "cpu") {  // the model's state travels to the host first
    for (auto& t : of_model.averaged) t = t.to(torch::kCPU);
    for (auto& t : of_model.copied) t = t.to(torch::kCPU);
  }
  // get_decay(step) on the device: step = max(0, updates - update_after_step - 1); 0 at step 0.
  updates_.add_(1);
  const torch::Tensor step =
      (updates_ - static_cast<double>(options_.update_after_step + 1)).clamp_min(0.0);
  torch::Tensor decay;
  if (options_.warmup)
    decay = (1.0 - (1.0 + step / options_.warmup_gamma).pow(-options_.warmup_power))
                .clamp_max(options_.decay)
                .clamp_min(options_.min_decay);
  else
    decay = torch::full_like(step, options_.decay);
  decay = torch::where(step > 0, decay, torch::zeros_like(decay));
  const torch::Tensor weight = 1.0 - decay;  // float64, as timm's Python float
  // One foreach lerp per dtype with the weight as a device tensor: torch's _foreach_lerp_ has no
  // overload for a single tensor weight, its list form takes one (0-dim) per entry.
  for (auto& group : lerp_groups_) {
    std::vector<torch::Tensor> end;
    end.reserve(group.indices.size());
    for (size_t i : group.indices) end.push_back(of_model.averaged[i]);
    const std::vector<torch::Tensor> weights(end.size(), weight.to(group.dtype));
    at::_foreach_lerp_(group.averaged, end, weights);
  }
  for (size_t i = 0; i < ema_.copied.size(); ++i) ema_.copied[i].copy_(of_model.copied[i]);
}

void ModelEma::exchange_with(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  const Entries of_model = entries_of(model);
  const auto exchange = [](const std::vector<torch::Tensor>& a, std::vector<torch::Tensor>& b) {
    for (size_t i = 0; i < a.size(); ++i) {
      const torch::Tensor kept = a[i].clone();
      a[i].copy_(b[i]);
      b[i].copy_(kept);
    }
  };
  exchange(of_model.averaged, ema_.averaged);
  exchange(of_model.copied, ema_.copied);
}

}  // namespace runner::train
