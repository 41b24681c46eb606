#pragma once
// Autocast on for one forward pass (fp16/bf16), off again and its cast cache cleared when the
// guard ends, also when the pass throws (an out-of-memory trial of auto batch size).

#include <string>

#include <torch/torch.h>

#include "compat/torch_compat.hpp"
#include "config/experiment_options.hpp"

namespace runner::train {

class AutocastGuard {
 public:
  /// fp32: nothing happens.
  AutocastGuard(config::Precision precision, torch::Device device) {
    if (precision == config::Precision::kFp32) return;
    type_ = device.type();
    dtype_ = precision == config::Precision::kFp16 ? at::kHalf : at::kBFloat16;
    compat::set_autocast(type_, dtype_, true);
    active_ = true;
  }
  ~AutocastGuard() {
    if (!active_) return;
    compat::set_autocast(type_, dtype_, false);
    at::autocast::clear_cache();
  }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType type_ = c10::DeviceType::CPU;
  at::ScalarType dtype_ = at::kFloat;
};

}  // namespace runner::train
