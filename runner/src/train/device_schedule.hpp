#pragma once
// The learning-rate schedule on the device: the scheduler's lr for every optimizer step of the
// run, tabulated once, indexed by a device count of the steps taken (a step the fp16 loss
// scaler skips does not count, as optim::Scheduler defines). A step reads its learning rate
// without the host, and the host learns the count only when it reads a log window.

#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace runner::train {

class DeviceSchedule {
 public:
  /// `lrs[k]`: the lr of optimizer step k; later steps keep the last one.
  DeviceSchedule(const std::vector<double>& lrs, torch::Device device);

  /// The lr of the next step, 0-dim on the device: float32 on CUDA (what the fused optimizer
  /// kernels read there), float64 on CPU (the CPU kernels take a double: no rounding of lr).
  const torch::Tensor& lr() const { return lr_; }
  /// Counts the step just taken: +1, or +0 where `found_inf` (float32, from the loss scaler) is
  /// set; undefined `found_inf`: +1. Moves lr() to the next step's.
  void count_step(const torch::Tensor& found_inf);
  /// Steps taken so far, int64 0-dim on the device (read with a log window).
  const torch::Tensor& steps_taken() const { return taken_; }
  /// Sets the count (resuming from a checkpoint).
  void set_steps_taken(int64_t steps);

 private:
  void refresh_lr();

  torch::Tensor table_;  ///< [n] lrs
  torch::Tensor taken_;  ///< int64 0-dim
  torch::Tensor lr_;     ///< table_[min(taken_, n - 1)]
};

}  // namespace runner::train
