#pragma once
// A Pipeline's transforms on whole batches of tensors (data.device): each sample's random choices
// drawn from Rng(seed, epoch, index) in the per-sample path's order, then one tensor operation
// per transform over the batch, on the batch's device. The same seed, epoch and indices give the
// per-sample path's augmentation (exactly, or within what each transform states).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "data/pipeline.hpp"

namespace runner::data {

class BatchedTransform;

class BatchedPipeline {
 public:
  /// Throws ConfigError naming the first transform of `pipeline` that has no batched form, with
  /// `list` (e.g. "data.train_transforms") as where it is configured.
  BatchedPipeline(const Pipeline& pipeline, const std::string& list);

  /// `images` [B, C, H, W], uint8 or float32, on any device; `indices` the samples' augmentation
  /// keys (B of them: the dataset index, another key for a repeated draw; SampledIndex::key).
  /// Returns float32 [B, C', H', W'] on the same device, as collate() makes of the per-sample
  /// path's images.
  torch::Tensor apply(const torch::Tensor& images, const std::vector<int64_t>& indices,
                      uint64_t seed, uint64_t epoch) const;

  size_t size() const { return transforms_.size(); }

 private:
  std::vector<std::shared_ptr<const Transform>> owners_;  ///< keeps the transforms alive
  std::vector<const BatchedTransform*> transforms_;
};

}  // namespace runner::data
