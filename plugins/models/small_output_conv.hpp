#pragma once
// Convolutions whose output is a few pixels per image, as one matrix product on the CPU. At the
// reference workload's 56 px a ResNet's last stage is 2x2: there oneDNN's forward and backward
// of a 3x3 convolution run at a third to a half of this core's GEMM rate (most of each window is
// padding), 44 % of resnet18's 1-thread step (bench/RESULTS.md, "Where the ResNet step goes").
// Below kMaxGemmOutputPixels output pixels per image the forward is one GEMM over im2col rows,
// the backward two (weight and input gradients) and a col2im; larger outputs, other devices and
// grouped convolutions keep ATen's convolution.

#include <cstdint>

#include <torch/nn/modules/conv.h>
#include <torch/types.h>

namespace runner::models {

/// The measured crossover (bench/conv_gemm_bench): at 2x2 outputs the GEMM form is 1.1-2x
/// oneDNN's forward + backward, at 4x4 0.6-0.9x.
constexpr int64_t kMaxGemmOutputPixels = 4;

/// conv->forward(x), with the same outputs and gradients to float rounding (the sums in another
/// order), through the GEMM form where it applies: a CPU tensor, groups 1, zero padding given as
/// numbers, at most kMaxGemmOutputPixels output pixels per image, fp32 (or bf16 under CPU
/// autocast, which it follows as at::conv2d does). The output keeps x's memory format. Either
/// way the weight is compute_weight's: under CPU bf16 autocast in training the kept bf16 copy
/// (the same bits autocast's cast would give), so no weight is cast in the forward.
torch::Tensor conv2d(const torch::nn::Conv2dImpl& conv, const torch::Tensor& x);

/// The largest output, in pixels per image, that conv2d computes as a GEMM, for the whole
/// process: kMaxGemmOutputPixels unless set; 0 turns the GEMM form off (benches compare both).
void set_gemm_output_pixels(int64_t max);
int64_t gemm_output_pixels();

}  // namespace runner::models
