#pragma once
// A BatchNorm2d that can take its training statistics over every rank's batch, as PyTorch's
// nn.SyncBatchNorm. Model plugins use it in place of torch::nn::BatchNorm2d so that
// `train.bn_sync: sync` can attach a sync group; parameter and buffer names stay torch's.

#include <functional>

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace runner::models {

/// Sums a tensor in place across all ranks. A collective: every rank calls it, in the same order.
using AllReduceSum = std::function<void(torch::Tensor&)>;

class BatchNorm2dImpl : public torch::nn::BatchNorm2dImpl {
 public:
  explicit BatchNorm2dImpl(const torch::nn::BatchNormOptions& options)
      : torch::nn::BatchNorm2dImpl(options) {}

  /// Without a sync group, or in eval mode: exactly torch::nn::BatchNorm2d's forward. In
  /// training mode with a group: normalises with the mean and variance of the global batch
  /// (ranks' batch sizes may differ), updates the running statistics from them, and its
  /// backward all-reduces the statistics' gradients. Every rank must call it then.
  torch::Tensor forward(const torch::Tensor& input);

  /// Attaches the all-reduce used in training mode; an empty function detaches it.
  void set_sync(AllReduceSum all_reduce_sum) { all_reduce_sum_ = std::move(all_reduce_sum); }
  /// Whether a sync group is attached.
  bool synchronised() const { return static_cast<bool>(all_reduce_sum_); }

 private:
  AllReduceSum all_reduce_sum_;
};
TORCH_MODULE(BatchNorm2d);

}  // namespace runner::models
