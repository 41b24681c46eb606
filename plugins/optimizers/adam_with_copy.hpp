#pragma once
// Adam's and AdamW's step over one float32 CPU tensor that also writes the tensor's bf16 compute
// copy (runner/models/compute_copies.hpp) in the same pass: one bf16 store per element instead
// of the forward's cast (a read of the float32 weight and a write of a fresh bf16 tensor).
// The arithmetic is that of ATen's CPU _fused_adam_/_fused_adamw_ (the kernel torch's fused
// Adam runs), operation for operation, so the weights and moments are the same bits; on a
// machine where a probe step shows otherwise (another ATen build), the caller steps with ATen.

#include <cstdint>
#include <string>

#include <torch/types.h>

namespace runner::optim {

struct AdamStepOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, weight_decay = 0, eps = 1e-8;
  bool decoupled =
      false;  // AdamW: param *= 1 - lr * weight_decay; Adam: grad += weight_decay * param
};

/// Whether this machine steps with runner's kernel: an x86-64 CPU with AVX2 and FMA and a vector
/// width at which three probe steps over every branch of the arithmetic and every tail length
/// equal ATen's bit for bit (probed once, against the kernels ATen runs here).
bool adam_with_copy_supported();

/// How the bf16 copies are written on this machine, in words (`runner env`, run.json).
std::string adam_with_copy_description();

/// Tensors stepped by runner's kernel in this process so far (tests: the probe's verdict is
/// what the training does).
int64_t adam_with_copy_tensors_stepped();

/// One step (number `step`, counted from 1) of `param` with `grad`, `exp_avg`, `exp_avg_sq`
/// (float32 CPU tensors, non-overlapping and dense, all with param's strides), writing `copy`
/// (bf16, param's strides) as param's bf16 rounding. No amsgrad, maximize or gradient scale.
/// Bumps no version counter (the caller records the write). Requires adam_with_copy_supported().
void adam_step_with_copy(const torch::Tensor& param, const torch::Tensor& grad,
                         const torch::Tensor& exp_avg, const torch::Tensor& exp_avg_sq,
                         const torch::Tensor& copy, double step, const AdamStepOptions& options);

/// Whether the tensors meet adam_step_with_copy's requirements.
bool adam_with_copy_applies(const torch::Tensor& param, const torch::Tensor& grad,
                            const torch::Tensor& exp_avg, const torch::Tensor& exp_avg_sq,
                            const torch::Tensor& copy);

}  // namespace runner::optim
