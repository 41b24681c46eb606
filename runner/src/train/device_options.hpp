#pragma once
// Per-device settings taken from the experiment: the current CUDA device, cuDNN autotuning,
// channels_last weights, and the peak GPU memory figure of the metrics.

#include <string>

#include <torch/torch.h>

#include "config/experiment_options.hpp"

namespace runner::train {

/// Applies launch.cudnn_benchmark (a process-wide flag) and makes `device` the current CUDA
/// device. Call once `device` is chosen, before the first collective or CUDA kernel of the run.
void apply_device_settings(bool cudnn_benchmark, const torch::Device& device);

/// With train.channels_last, stores every 4-D parameter and buffer of `model` in channels_last
/// order (convolutions then run NHWC; inputs need no change). Call after model->to(device).
void apply_memory_format(bool channels_last, torch::nn::Module& model);

/// The precision a CPU rank runs `wanted` in: CPUs have no fp16 kernels, so fp16 runs as bf16
/// where the CPU has native bf16 (util::native_bf16_feature) and as fp32 elsewhere; bf16 and
/// fp32 as asked.
config::Precision precision_on_cpu(config::Precision wanted);

/// train.channels_last as run: `mode` true or false as given; auto picks channels_last on CUDA
/// when the run computes in fp16/bf16 (tensor cores take NHWC) and NCHW elsewhere (on the CPU
/// channels_last measured no faster for any native family: bench/RESULTS.md). `reason`, when
/// given, gets one line saying what auto chose and why.
bool channels_last_as_run(const std::string& mode, const torch::Device& device,
                          config::Precision precision, std::string* reason = nullptr);

/// How `model`'s convolution weights are laid out, read from the tensors themselves:
/// "channels_last", "contiguous", or "none" without a 4-D weight of more than one channel.
std::string memory_format_of(const torch::nn::Module& model);

/// Throws ConfigError, prefixed by `where` ("exp.yaml:5:11: "), when launch.device is cuda and
/// no CUDA device is visible: checked before any rank starts, and again where a rank picks it.
void require_cuda_if_asked(const config::LaunchOptions& launch, const std::string& where = "");

/// Throws ConfigError, prefixed by `where`, when launch.backend is nccl and no CUDA device is
/// visible: before any rank starts, instead of the same error from every rank.
void require_cuda_for_nccl(const config::LaunchOptions& launch, const std::string& where = "");
/// data.device cuda where batches cannot be made on a GPU (none here, or a CPU run): ConfigError
/// saying what to set instead.
void require_cuda_for_data_device(const config::ExperimentOptions& options,
                                  const std::string& where = "");

/// True when this build has its CUDA code compiled in (CUDA libtorch, CUDA headers found).
bool built_with_cuda();

/// Peak GPU memory the caching allocator handed out on `device` so far, in MiB; 0 on CPU or in
/// a build without CUDA.
double peak_gpu_mib(const torch::Device& device);

}  // namespace runner::train
