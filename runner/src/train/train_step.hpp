#pragma once
// One optimizer step of one rank, as a unit: forward under autocast, the loss, backward with
// the gradient sync, then at the accumulation window's end the unscale/inf check, clipping, the
// optimizer update (skipped on the device when the fp16 loss scaler found inf/NaN), the step
// count and lr of the schedule, the scaler update and zeroing. Nothing here reads a device
// value on the host: losses and non-finite counts accumulate on the device until the Trainer
// reads a window of them. The Trainer runs it in its epoch loop; auto batch size measures the
// same step.

#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "config/experiment_options.hpp"
#include "dist/data_parallel.hpp"
#include "runner/losses/loss.hpp"
#include "runner/models/model.hpp"
#include "runner/optim/optimizer.hpp"
#include "train/device_schedule.hpp"
#include "train/grad_scaler.hpp"
#include "train/model_ema.hpp"

namespace runner::train {

/// What a step works with; everything is owned elsewhere and outlives the step.
struct TrainStepParts {
  models::Model* model = nullptr;
  optim::Optimizer* optimizer = nullptr;
  DeviceSchedule* schedule = nullptr;
  losses::Loss* loss = nullptr;
  GradScaler* scaler = nullptr;
  dist::DataParallel* data_parallel = nullptr;             ///< nullptr: gradients stay local
  config::Precision precision = config::Precision::kFp32;  ///< as run
  torch::Device device = torch::kCPU;
  std::optional<double> clip_grad_norm;
};

/// What the micro-batches since the last take_window() left on the device (float64, 0-dim).
struct WindowSums {
  torch::Tensor loss;       ///< sum of the finite losses
  torch::Tensor finite;     ///< how many losses were finite
  torch::Tensor nonfinite;  ///< how many were NaN/inf
  /// The longest run of consecutive optimizer steps with a NaN/inf loss among the window's
  /// steps (a run that began in an earlier window counts whole).
  torch::Tensor longest_nonfinite_run;
  int64_t micro_batches = 0;
};

class TrainStep {
 public:
  explicit TrainStep(TrainStepParts parts);

  /// Forward and backward of one micro-batch of the window of `window` micro-batches (its
  /// gradient is the window's mean); `sync`: the window's last, whose backward all-reduces the
  /// gradients. `labels`: class indices [N], or class probabilities [N, C] (train.mixup's soft
  /// targets). Its loss joins the window sums; returns it (detached, float32, on the device).
  torch::Tensor micro_batch(const torch::Tensor& images, const torch::Tensor& labels,
                            int64_t window, bool sync);

  /// Ends the optimizer step after the window's last micro-batch: unscale, clip, update (on the
  /// device, skipped where the loss scaler found inf/NaN: such a step is no optimizer step and
  /// the schedule does not count it), scaler update, zero the gradients.
  void finish();

  /// The window sums since the last take, zeroed for the next window.
  WindowSums take_window();

  /// Consecutive optimizer steps up to now with a NaN/inf loss (float64 0-dim, on the device).
  const torch::Tensor& nonfinite_run() const { return nonfinite_run_; }
  /// Restores it (a checkpoint's).
  void set_nonfinite_run(int64_t steps) { nonfinite_run_.fill_(static_cast<double>(steps)); }

  /// train.ema: the average finish() updates after every optimizer step (nullptr: none).
  void attach_ema(ModelEma* ema) { ema_ = ema; }

 private:
  TrainStepParts parts_;
  ModelEma* ema_ = nullptr;
  WindowSums window_;
  torch::Tensor step_nonfinite_;  ///< 1 when a micro-batch of the current step had NaN/inf
  torch::Tensor nonfinite_run_;
};

/// torch.nn.utils.clip_grad_norm_ without its host read: the total norm, the factor (at most 1)
/// and the scaling all stay on the device.
void clip_grad_norm_on_device(const std::vector<torch::Tensor>& parameters, double max_norm);

}  // namespace runner::train
