#pragma once
// A depthwise convolution (groups = channels, zero padding (k - 1) / 2, odd square kernel, any
// stride: ConvNeXt's 7x7, EfficientNet's 3x3 and 5x5 at strides 1 and 2) whose backward is
// runner's own on the CPU. ATen computes the depthwise weight gradient on the CPU with a generic
// path at 0.1-0.2 GB/s: 30 % of convnext_small's fp32 training step and 65 % of its bf16 one
// (bench/RESULTS.md, "Where the 1-thread convnext_small step goes"), and its bf16 input gradient
// at stride 2 the same way (30 ms where the forward takes 0.5). Here the forward and the input
// gradient are oneDNN convolutions (the input gradient is the forward convolution of the output
// gradient, spread back to the stride-1 grid, with the kernel flipped; fp32 at stride 2 keeps
// ATen's, which is oneDNN's), and the weight gradient is one pass over channels-last rows in
// float32 (depthwise_conv.cpp). Other devices keep ATen's convolution and its backward.

#include <torch/torch.h>

namespace runner::models {

/// conv2d(x, weight, bias, stride, padding (k - 1) / 2, groups = channels) for x [N, C, H, W]
/// (either memory format, fp32 or under bf16/fp16 autocast as at::conv2d) and weight
/// [C, 1, k, k] with k odd; the same outputs as at::conv2d and gradients equal to its to float
/// rounding (the weight gradient summed in float32 in another order).
torch::Tensor depthwise_conv2d(const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias, int64_t stride = 1);

/// The weight gradient alone: sum over n, y, x of grad_output[n, c, y, x] * x[n, c, y * s + i -
/// p, x * s + j - p] as float32 [C, 1, k, k] (zero outside the image), on CPU tensors of any
/// float type.
torch::Tensor depthwise_weight_grad(const torch::Tensor& x, const torch::Tensor& grad_output,
                                    int64_t kernel, int64_t stride = 1);

}  // namespace runner::models
