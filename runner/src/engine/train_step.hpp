#pragma once
// One optimizer step of one rank, as a unit: forward under autocast, the loss, backward with
// the gradient sync, then at the accumulation window's end the unscale/inf check, clipping, the
// optimizer step, the scaler update and zeroing. Nothing here reads a device value on the host
// except the loss scaler's decision to skip a step (fp16). The Trainer runs it in its epoch
// loop; auto batch size measures the same step.

#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "dist/data_parallel.hpp"
#include "engine/grad_scaler.hpp"
#include "runner/losses/loss.hpp"
#include "runner/models/model.hpp"

namespace runner::engine {

/// What a step works with; everything is owned elsewhere and outlives the step.
struct TrainStepParts {
  models::Model* model = nullptr;
  torch::optim::Optimizer* optimizer = nullptr;
  losses::Loss* loss = nullptr;
  GradScaler* scaler = nullptr;
  dist::DataParallel* data_parallel = nullptr;  ///< nullptr: gradients stay local
  std::string precision = "fp32";               ///< as run: fp32, fp16 or bf16
  torch::Device device = torch::kCPU;
  std::optional<double> clip_grad_norm;
};

/// The losses of the micro-batches since the last take_window(), on the device.
struct WindowSums {
  torch::Tensor loss;       ///< double, 0-dim: sum of the finite losses
  torch::Tensor nonfinite;  ///< double, 0-dim: how many losses were NaN/inf
  int64_t count = 0;        ///< micro-batches
};

class TrainStep {
 public:
  explicit TrainStep(TrainStepParts parts);

  /// Forward and backward of one micro-batch of the window of `window` micro-batches (its
  /// gradient is the window's mean); `sync`: the window's last, whose backward all-reduces the
  /// gradients. Its loss joins the window sums; returns it (detached, float32, on the device).
  torch::Tensor micro_batch(const torch::Tensor& images, const torch::Tensor& labels,
                            int64_t window, bool sync);

  /// Ends the optimizer step after the window's last micro-batch: unscale, clip, step, scaler
  /// update, zero the gradients. Returns whether the optimizer stepped (false: the loss scaler
  /// skipped a step with inf/NaN gradients; it is no optimizer step).
  bool finish();

  /// The window sums since the last take, zeroed for the next window.
  WindowSums take_window();

 private:
  TrainStepParts parts_;
  WindowSums window_;
};

/// torch.nn.utils.clip_grad_norm_ without its host read: the total norm, the factor (at most 1)
/// and the scaling all stay on the device.
void clip_grad_norm_on_device(const std::vector<torch::Tensor>& parameters, double max_norm);

}  // namespace runner::engine
