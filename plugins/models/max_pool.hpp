#pragma once
// The ResNet stem's 3x3 / stride 2 / padding 1 max pooling with runner's own forward on the CPU.
// ATen's NCHW CPU kernel scans each window element by element: 6 ms of every ResNet's 1-thread
// step at 56 px (bench/RESULTS.md, "Where the ResNet step goes"), 20 times its channels-last
// kernel. Here each input row's three-column maxima are taken once and shared by the output rows
// that read that row. Values and indices are ATen's (the first maximum in row-major order, NaN
// propagated as ATen does), so its backward (max_pool2d_with_indices_backward) routes gradients
// to the same elements.

#include <torch/types.h>

namespace runner::models {

/// max_pool2d(x, 3, 2, 1) for x [N, C, H, W]: runner's forward for a contiguous NCHW float32 or
/// bf16 CPU tensor, else ATen's.
torch::Tensor max_pool_3x3_s2(const torch::Tensor& x);

}  // namespace runner::models
