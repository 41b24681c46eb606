#include "train/device_schedule.hpp"

#include "runner/error.hpp"

namespace runner::train {

DeviceSchedule::DeviceSchedule(const std::vector<double>& lrs, torch::Device device) {
  if (lrs.empty()) throw Error("internal: a learning-rate schedule of no steps");
  const auto dtype = device.is_cuda() ? torch::kFloat : torch::kDouble;
  table_ = torch::tensor(lrs, torch::kDouble).to(device, dtype);
  taken_ = torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(device));
  refresh_lr();
}

void DeviceSchedule::refresh_lr() {
  lr_ = table_.index_select(0, taken_.clamp_max(table_.size(0) - 1).view({1}))
            .reshape(at::IntArrayRef{});
}

void DeviceSchedule::count_step(const torch::Tensor& found_inf) {
  if (found_inf.defined())
    taken_.add_(1 - found_inf.reshape(at::IntArrayRef{}).to(torch::kLong));
  else
    taken_.add_(1);
  refresh_lr();
}

void DeviceSchedule::set_steps_taken(int64_t steps) {
  taken_.fill_(steps);
  refresh_lr();
}

}  // namespace runner::train
