#pragma once
// model.grad_checkpointing: a block's activations are not kept for backward but recomputed
// there (torch.utils.checkpoint's reentrant form, what timm's checkpoint_seq runs per block),
// trading one more forward of the block for its activation memory. libtorch's C++ API has no
// checkpoint: this is one, as an autograd Function.

#include <functional>
#include <vector>

#include <torch/torch.h>

namespace runner::models {

/// What a checkpointed block computes from its input.
using CheckpointBody = std::function<torch::Tensor(const torch::Tensor&)>;

/// `body(x)`, keeping only `x` for backward. Backward runs `body` again with the forward's
/// random generator state (dropout and drop path draw the same) and autocast state, and gives
/// the gradients of `x` and of `params` (the parameters `body` reads: they receive them through
/// this node, so gradient averaging hooks see them as usual). `buffers` (BatchNorm's running
/// statistics) are put back after the recompute, which would otherwise update them twice.
/// `body` must outlive the backward (a member of the module). Same values as body(x) directly.
torch::Tensor checkpoint(const CheckpointBody& body, const torch::Tensor& x,
                         const std::vector<torch::Tensor>& params,
                         const std::vector<torch::Tensor>& buffers);

/// Whether a checkpointed block should recompute: training with gradients on.
inline bool checkpoint_applies(const torch::nn::Module& block) {
  return block.is_training() && torch::GradMode::is_enabled();
}

}  // namespace runner::models
