#include "engine/train_step.hpp"

#include "engine/autocast_guard.hpp"

namespace runner::engine {

void clip_grad_norm_on_device(const std::vector<torch::Tensor>& parameters, double max_norm) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return;
  const auto norms = at::_foreach_norm(grads, 2);
  const torch::Tensor total = torch::linalg_vector_norm(torch::stack(norms), 2);
  const torch::Tensor factor = (max_norm / (total + 1e-6)).clamp_max(1.0);
  at::_foreach_mul_(grads, factor);
}

TrainStep::TrainStep(TrainStepParts parts) : parts_(std::move(parts)) { take_window(); }

WindowSums TrainStep::take_window() {
  WindowSums taken = window_;
  const auto on_device = torch::TensorOptions().dtype(torch::kDouble).device(parts_.device);
  window_ = {torch::zeros({}, on_device), torch::zeros({}, on_device), 0};
  return taken;
}

torch::Tensor TrainStep::micro_batch(const torch::Tensor& images, const torch::Tensor& labels,
                                     int64_t window, bool sync) {
  auto& model = *parts_.model;
  if (parts_.data_parallel) parts_.data_parallel->before_forward();
  torch::Tensor logits;
  {
    AutocastGuard autocast(parts_.precision, parts_.device);
    logits = model.forward(images);
  }
  const torch::Tensor loss = parts_.loss->compute(logits.to(torch::kFloat), labels);
  const torch::Tensor scaled = parts_.scaler->scale(loss / static_cast<double>(window));
  if (parts_.data_parallel) parts_.data_parallel->before_backward({scaled}, sync);
  scaled.backward();

  // Summed on the device: the Trainer reads the window once per step, in its collective.
  const torch::Tensor value = loss.detach().to(torch::kDouble);
  const torch::Tensor finite = torch::isfinite(value);
  window_.loss.add_(torch::where(finite, value, torch::zeros_like(value)));
  window_.nonfinite.add_(finite.logical_not());
  ++window_.count;
  return loss.detach();
}

bool TrainStep::finish() {
  auto& optimizer = *parts_.optimizer;
  if (parts_.clip_grad_norm) {
    parts_.scaler->unscale_(optimizer);  // the clip sees the true gradients
    clip_grad_norm_on_device(parts_.model->parameters(), *parts_.clip_grad_norm);
  }
  const bool stepped = parts_.scaler->step(optimizer);
  parts_.scaler->update();
  if (parts_.data_parallel)
    parts_.data_parallel->zero_grad();
  else
    optimizer.zero_grad();
  return stepped;
}

}  // namespace runner::engine
