#pragma once
// A BatchNorm2d that can take its training statistics over every rank's batch, as PyTorch's
// nn.SyncBatchNorm. Model plugins use it in place of torch::nn::BatchNorm2d so that
// `train.bn_sync: sync` can attach a sync group. Its parameters and buffers, their names
// (weight, bias, running_mean, running_var, num_batches_tracked) and its options are torch's.
// It is not a torch::nn::BatchNorm2dImpl: libtorch 1.13 does not export all that class's
// virtual functions, so a subclass of it cannot link.

#include <functional>
#include <ostream>

#include <torch/nn/cloneable.h>
#include <torch/nn/options/batchnorm.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace runner::models {

/// Sums a tensor in place across all ranks. A collective: every rank calls it, in the same order.
using AllReduceSum = std::function<void(torch::Tensor&)>;

class BatchNorm2dImpl : public torch::nn::Cloneable<BatchNorm2dImpl> {
 public:
  explicit BatchNorm2dImpl(const torch::nn::BatchNormOptions& options);

  /// In eval mode: exactly torch::nn::BatchNorm2d's forward (same results bit for bit). In
  /// training mode without a sync group: torch's, computed by runner's CPU kernel for a
  /// contiguous NCHW float32 CPU input (models/batch_norm_cpu.hpp: the same to float rounding,
  /// statistics in one pass) and by ATen otherwise. In training mode with a group:
  /// normalises with the mean and variance of the global batch (ranks' batch sizes may differ),
  /// updates the running statistics from them, and its backward all-reduces the statistics'
  /// gradients. Every rank must call it then.
  torch::Tensor forward(const torch::Tensor& input);

  /// relu(forward(input)), the ReLU folded into the CPU kernel's passes where it runs.
  torch::Tensor forward_relu(const torch::Tensor& input);

  /// Attaches the all-reduce used in training mode; an empty function detaches it.
  void set_sync(AllReduceSum all_reduce_sum) { all_reduce_sum_ = std::move(all_reduce_sum); }
  /// Whether a sync group is attached.
  bool synchronised() const { return static_cast<bool>(all_reduce_sum_); }

  /// (Re)creates parameters and buffers as torch::nn::BatchNorm2d does.
  void reset() override;
  /// Running statistics back to mean 0, variance 1, no batches tracked.
  void reset_running_stats();
  /// reset_running_stats() and weight 1, bias 0.
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  torch::nn::BatchNormOptions options;
  torch::Tensor weight, bias;  ///< undefined unless options.affine()
  torch::Tensor running_mean, running_var, num_batches_tracked;  ///< with track_running_stats

 private:
  torch::Tensor apply(const torch::Tensor& input, bool relu);

  AllReduceSum all_reduce_sum_;
};
TORCH_MODULE(BatchNorm2d);

/// at::batch_norm, computed by runner's CPU kernel where BatchNorm2d's training mode would use
/// it (training, a contiguous NCHW float32 CPU input, weight and bias both given or both not):
/// the op a TorchScript model's BatchNorms call once runner's kernels are in its graph.
torch::Tensor batch_norm(const torch::Tensor& input, const torch::Tensor& weight,
                         const torch::Tensor& bias, const torch::Tensor& running_mean,
                         const torch::Tensor& running_var, bool training, double momentum,
                         double eps, bool cudnn_enabled);

}  // namespace runner::models
