#pragma once
// bf16 copies of a native model's float32 weights, kept from step to step. Under the CPU's bf16
// autocast every forward re-casts each weight a matrix product reads (convnext_small: 47 M
// parameters read as float32 and written as bf16 per step and rank); with a kept copy the
// optimizer's update writes it in the same pass that writes the float32 weight, and the
// forward reads it as it is. The float32 weights stay the master copy that the optimizer
// steps, the checkpoint saves and the gradients reach; a copy is only ever read while it
// equals the bf16 rounding of its weight (rewritten from the weight whenever the weight
// changed by any other means: tracked by the weight's version counter).

#include <functional>
#include <string>

#include <torch/types.h>

namespace runner::models {

/// What a layer computes with for its parameter `weight`. While training (grad mode on, weight
/// requiring grad) under CPU bf16 autocast, for a dense float32 CPU weight: the weight's kept
/// bf16 copy, linked to `weight` by autograd so that its gradient reaches the weight as
/// autocast's own cast would send it (the same bits). Otherwise `weight` itself, which autocast
/// then casts as usual. Only for ops autocast runs in bf16 (linear, convolution, matmul).
torch::Tensor compute_weight(const torch::Tensor& weight);

/// For an optimizer whose update can write the bf16 copy in the same pass as `param`: the copy
/// to write (same sizes and strides as `param`), or an undefined tensor when the forward keeps
/// none for it. Calling it tells the forward that the optimizer writes this copy from now on;
/// after writing both, call compute_copy_written(param).
torch::Tensor compute_copy_to_write(const torch::Tensor& param);

/// Records that the optimizer has written `param` and its copy: bumps the parameter's version
/// counter (as an in-place op would) and marks the copy current for it.
void compute_copy_written(const torch::Tensor& param);

/// On (the default) or off: off, compute_weight returns the weight itself and autocast casts it
/// every forward (benches compare both; the results are the same bits).
void set_compute_copies(bool on);
bool compute_copies_on();

/// How the optimizers write the copies on this machine, in one line for `runner env` and
/// run.json: set by the optimizer plugin that writes them (the core includes no plugin);
/// "not written by any optimizer" until one is set.
void set_compute_copy_writer(std::function<std::string()> describe);
std::string compute_copy_writer();

}  // namespace runner::models
