#include "train/train_step.hpp"

#include "train/autocast_guard.hpp"

namespace runner::train {

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

namespace {
torch::Tensor device_zero(const torch::Device& device) {
  return torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
}
}  // namespace

TrainStep::TrainStep(TrainStepParts parts) : parts_(std::move(parts)) {
  step_nonfinite_ = device_zero(parts_.device);
  nonfinite_run_ = device_zero(parts_.device);
  take_window();
}

WindowSums TrainStep::take_window() {
  WindowSums taken = window_;
  const auto& d = parts_.device;
  window_ = {device_zero(d), device_zero(d), device_zero(d), nonfinite_run_.clone(), 0};
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
  if (parts_.data_parallel) parts_.data_parallel->after_backward();

  // Summed on the device: the Trainer reads a window of them at a time.
  const torch::Tensor value = loss.detach().to(torch::kDouble);
  const torch::Tensor finite = torch::isfinite(value);
  const torch::Tensor nonfinite = finite.logical_not().to(torch::kDouble);
  window_.loss.add_(torch::where(finite, value, torch::zeros_like(value)));
  window_.finite.add_(finite);
  window_.nonfinite.add_(nonfinite);
  step_nonfinite_ = torch::maximum(step_nonfinite_, nonfinite);
  ++window_.micro_batches;
  return loss.detach();
}

void TrainStep::finish() {
  auto& optimizer = *parts_.optimizer;
  // Undefined without loss scaling; else 1 where a gradient is inf/NaN (the update is skipped).
  const torch::Tensor found_inf = parts_.scaler->unscale_(optimizer.torch_optimizer());
  if (parts_.clip_grad_norm)  // after the unscale: the clip sees the true gradients
    clip_grad_norm_on_device(parts_.model->parameters(), *parts_.clip_grad_norm);
  optimizer.update(parts_.schedule->lr(), found_inf);
  if (parts_.data_parallel) parts_.data_parallel->after_optimizer_step();
  parts_.schedule->count_step(found_inf);
  // timm updates its average after every optimizer step, one the loss scaler skipped too.
  if (ema_) ema_->update(*parts_.model);
  if (parts_.scaler->enabled()) parts_.scaler->update();
  // A run of steps with a NaN/inf loss grows by one, a finite step ends it.
  nonfinite_run_.add_(1).mul_(step_nonfinite_);
  window_.longest_nonfinite_run = torch::maximum(window_.longest_nonfinite_run, nonfinite_run_);
  step_nonfinite_.zero_();
  if (parts_.data_parallel)
    parts_.data_parallel->zero_grad();
  else
    optimizer.torch_optimizer().zero_grad();
}

}  // namespace runner::train
