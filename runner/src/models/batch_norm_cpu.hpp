#pragma once
// Training-mode BatchNorm2d (and the ReLU after it) as runner's own CPU kernel. ATen's NCHW CPU
// kernel reads the input twice for the statistics and runs its per-plane loops over 4 to 784
// values at the reference workload's 56 px: 2-3 GB/s, 8 % of resnet18's 1-thread step and 13 %
// of resnet50's (bench/RESULTS.md, "Where the 1-thread step goes, by family"), plus a pass each
// for the ReLU and its backward. Here each channel's statistics take one pass over memory (each
// plane summed, then its squared deviations from its own mean while it is in L1, merged in
// double as Chan et al.'s parallel variance), the normalisation and the ReLU one, and the
// backward two (sums, then the input gradient) with the ReLU's mask folded in.

#include <torch/types.h>

namespace runner::models {

/// Whether cpu_batch_norm_train takes `input`: a contiguous NCHW float32 CPU tensor with more
/// than one value per channel, and float32 weight and bias (or none), while the kernel is on.
/// bf16 inputs stay ATen's: its reduced-precision kernel measured 1-3x faster than this one
/// (bench/batch_norm_bench), which converts each plane to float32 first.
bool cpu_batch_norm_applies(const torch::Tensor& input, const torch::Tensor& weight);

/// On (the default) or off for the whole process (benches compare both).
void set_cpu_batch_norm(bool on);

/// relu(batch_norm(input)) (or batch_norm(input) when !relu) in training mode, as
/// torch::nn::functional::batch_norm with training=true: the batch's mean and biased variance
/// normalise, the running statistics (when defined) move by `momentum` towards the mean and the
/// unbiased variance. Differentiable in input, weight and bias; the same results as ATen's
/// to float rounding (the sums in another order).
torch::Tensor cpu_batch_norm_train(const torch::Tensor& input, const torch::Tensor& weight,
                                   const torch::Tensor& bias, const torch::Tensor& running_mean,
                                   const torch::Tensor& running_var, double momentum, double eps,
                                   bool relu);

}  // namespace runner::models
