#pragma once
// Per-device settings taken from the experiment: the current CUDA device, cuDNN autotuning,
// channels_last weights, and the peak GPU memory figure of the metrics.

#include <torch/torch.h>
#include <nlohmann/json.hpp>

namespace runner::engine {

/// Makes `device` the current CUDA device and applies launch.cudnn_benchmark; no-op on CPU.
/// Call once `device` is chosen, before the first collective or CUDA kernel of the run.
void apply_device_settings(const nlohmann::json& doc, const torch::Device& device);

/// With train.channels_last, stores every 4-D parameter and buffer of `model` in channels_last
/// order (convolutions then run NHWC; inputs need no change). Call after model->to(device).
void apply_memory_format(const nlohmann::json& doc, torch::nn::Module& model);

/// True when this build has its CUDA code compiled in (CUDA libtorch, CUDA headers found).
bool built_with_cuda();

/// Peak GPU memory the caching allocator handed out on `device` so far, in MiB; 0 on CPU or in
/// a build without CUDA.
double peak_gpu_mib(const torch::Device& device);

}  // namespace runner::engine
