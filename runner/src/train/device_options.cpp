#include "train/device_options.hpp"

#include "compat/torch_compat.hpp"
#include "runner/error.hpp"
#include "util/cpu_features.hpp"

#if RUNNER_COMPAT_HAS_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace runner::train {

void apply_device_settings(bool cudnn_benchmark, const torch::Device& device) {
  // A process-wide flag (summary.json's torch_settings shows it); cuDNN reads it on CUDA only.
  compat::set_cudnn_benchmark(cudnn_benchmark);
  if (!device.is_cuda()) return;
#if RUNNER_COMPAT_HAS_CUDA
  // Kernels and NCCL calls without an explicit index go to the current device: make it ours.
  if (device.has_index()) c10::cuda::set_device(device.index());
#endif
  compat::cuda_reset_peak_bytes(device);
}

config::Precision precision_on_cpu(config::Precision wanted) {
  if (wanted != config::Precision::kFp16) return wanted;
  return util::native_bf16_feature().empty() ? config::Precision::kFp32 : config::Precision::kBf16;
}

bool channels_last_as_run(const std::string& mode, const torch::Device& device,
                          config::Precision precision, std::string* reason) {
  if (mode != "auto") return mode == "true";
  const bool reduced = precision != config::Precision::kFp32;
  const bool chosen = device.is_cuda() && reduced;
  if (reason)
    *reason =
        chosen ? "train.channels_last auto: NHWC weights (CUDA with fp16/bf16: tensor cores "
                 "take channels_last)"
               : std::string("train.channels_last auto: NCHW weights (") +
                     (device.is_cuda() ? "fp32 on CUDA" : "on the CPU channels_last is no faster") +
                     ")";
  return chosen;
}

void apply_memory_format(bool channels_last, torch::nn::Module& model) {
  if (!channels_last) return;
  torch::NoGradGuard no_grad;
  for (auto& p : model.parameters())
    if (p.dim() == 4) p.set_data(p.data().contiguous(torch::MemoryFormat::ChannelsLast));
  for (auto& b : model.buffers())
    if (b.dim() == 4) b.set_data(b.data().contiguous(torch::MemoryFormat::ChannelsLast));
}

std::string memory_format_of(const torch::nn::Module& model) {
  for (const auto& p : model.parameters()) {
    // With one channel or a 1x1 kernel both layouts have the same strides: look further.
    if (p.dim() != 4 || p.size(1) < 2 || p.size(2) * p.size(3) < 2) continue;
    if (p.is_contiguous()) return "contiguous";
    return p.is_contiguous(torch::MemoryFormat::ChannelsLast) ? "channels_last" : "strided";
  }
  return "none";
}

void require_cuda_if_asked(const config::LaunchOptions& launch, const std::string& where) {
  if (launch.device != "cuda" || torch::cuda::is_available()) return;
  throw ConfigError(
      where + "launch.device is cuda but no CUDA device is available (this libtorch: " +
      std::string(TORCH_VERSION) + "); run on CPU with --cpu or --set launch.device=cpu");
}

void require_cuda_for_nccl(const config::LaunchOptions& launch, const std::string& where) {
  if (launch.backend != "nccl" || torch::cuda::is_available()) return;
  throw ConfigError(where +
                    "launch.backend is nccl but no CUDA device is available: NCCL runs on GPUs; "
                    "use launch.backend=gloo (or auto) for CPU ranks");
}

void require_cuda_for_data_device(const config::ExperimentOptions& options,
                                  const std::string& where) {
  if (options.data.device != "cuda") return;
  if (!torch::cuda::is_available())
    throw ConfigError(where +
                      "data.device is cuda but no CUDA device is available: make batches on the "
                      "CPU with data.device: cpu (or auto, or loader), as a run with --cpu does");
  if (options.launch.device == "cpu")
    throw ConfigError(where +
                      "data.device is cuda but the run trains on the CPU (launch.device cpu or "
                      "--cpu): batches are made where the model trains; set data.device: cpu");
}

bool built_with_cuda() { return compat::kHasCuda; }

double peak_gpu_mib(const torch::Device& device) {
  return static_cast<double>(compat::cuda_peak_allocated_bytes(device)) / (1024.0 * 1024.0);
}

}  // namespace runner::train
