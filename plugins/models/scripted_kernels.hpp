#pragma once
// runner's CPU kernels inside a TorchScript model (timm/<name>, torchscript): the model's
// depthwise convolutions and BatchNorms are ATen's in its graph, and ATen's CPU backward of a
// depthwise convolution is its generic path (two thirds of timm/efficientnet_b0's bf16 step,
// bench/RESULTS.md), its NCHW BatchNorm runs at 2-3 GB/s. At load, every method's graph is
// inlined and its aten::conv2d (grouped) and aten::batch_norm calls become runner::conv2d and
// runner::batch_norm: ops with ATen's signatures that run runner's depthwise convolution
// (depthwise_conv.hpp) and BatchNorm kernel (runner/models/batch_norm.hpp) where those apply
// and ATen's op otherwise (another device, a dilated or multiplied kernel, eval mode, bf16
// BatchNorm). RUNNER_SCRIPTED_KERNELS=aten leaves the graph as it was (to compare).

#include <cstdint>

namespace torch::jit {
struct Module;
}

namespace runner::models {

/// How many calls of runner's ops the module's forward makes after a rewrite (inlined: a layer
/// called twice counts twice).
struct ScriptedKernelCalls {
  int64_t grouped_convolutions = 0;
  int64_t batch_norms = 0;
};

/// Moves `script`'s grouped convolutions and BatchNorms to runner's ops, before its first call
/// (the interpreter optimises a method's graph on its first call and keeps that). Unless
/// RUNNER_SCRIPTED_KERNELS is "aten".
ScriptedKernelCalls use_runner_kernels(torch::jit::Module& script);

/// The same without looking at the environment (tests compare both graphs).
ScriptedKernelCalls rewrite_to_runner_kernels(torch::jit::Module& script);

}  // namespace runner::models
