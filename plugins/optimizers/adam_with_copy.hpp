#pragma once
// Adam's and AdamW's step over one float32 CPU tensor that also writes the tensor's bf16 compute
// copy (runner/models/compute_copies.hpp) in the same pass: one bf16 store per element instead
// of the forward's cast (a read of the float32 weight and a write of a fresh bf16 tensor).
// The arithmetic is that of ATen's CPU _fused_adam_/_fused_adamw_ (the kernel torch's fused
// Adam runs), operation for operation, so the weights and moments are the same bits; on a
// machine where a probe step shows otherwise (another ATen build), the caller steps with ATen.

#include <torch/types.h>

namespace runner::optim {

struct AdamStepOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, weight_decay = 0, eps = 1e-8;
  bool decoupled =
      false;  // AdamW: param *= 1 - lr * weight_decay; Adam: grad += weight_decay * param
};

/// Whether this machine steps with runner's kernel: an x86-64 CPU with AVX2 and FMA, ATen's CPU
/// kernels built for AVX2 or AVX-512, and a probe step over every branch of the arithmetic
/// equal to ATen's bit for bit (checked once).
bool adam_with_copy_supported();

/// One step (number `step`, counted from 1) of `param` with `grad`, `exp_avg`, `exp_avg_sq`
/// (float32 CPU tensors, non-overlapping and dense, all with param's strides), writing `copy`
/// (bf16, param's strides) as param's bf16 rounding. No amsgrad, maximize or gradient scale.
/// Bumps no version counter (the caller records the write).
void adam_step_with_copy(const torch::Tensor& param, const torch::Tensor& grad,
                         const torch::Tensor& exp_avg, const torch::Tensor& exp_avg_sq,
                         const torch::Tensor& copy, double step, const AdamStepOptions& options);

/// Whether the tensors meet adam_step_with_copy's requirements.
bool adam_with_copy_applies(const torch::Tensor& param, const torch::Tensor& grad,
                            const torch::Tensor& exp_avg, const torch::Tensor& exp_avg_sq,
                            const torch::Tensor& copy);

}  // namespace runner::optim
