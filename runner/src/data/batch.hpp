#pragma once
// A collated batch: one contiguous tensor per field.

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "runner/data/dataset.hpp"

namespace runner::data {

struct Batch {
  torch::Tensor images;  ///< float32 [B, C, H, W]
  torch::Tensor labels;  ///< int64 [B], -1 for unlabelled samples
  /// float32 [B, classes] multi-hot, every label of each sample (task: multilabel); undefined
  /// for single-label batches.
  torch::Tensor targets;
  torch::Tensor indices;  ///< int64 [B], dataset indices
  torch::Tensor padding;  ///< bool [B], true for sampler padding (drop when gathering metrics)
  int64_t size = 0;       ///< B
};

/// Stacks `samples` (all images of one size and channel count, any depth) into a Batch:
/// images converted to float32 without scaling and laid out CHW. `indices` and `padding` have
/// one entry per sample. `pin_memory` allocates page-locked memory when CUDA is available.
/// Throws runner::DataError naming the sample index whose image size differs from the first.
Batch collate(const std::vector<Sample>& samples, const std::vector<size_t>& indices,
              const std::vector<bool>& padding, bool pin_memory = false);

/// The multi-hot rows [B, classes] (float32) of `indices` of `dataset`: 1 at each of a sample's
/// labels (sample_labels). Throws DataError naming the sample whose label is not below classes.
torch::Tensor multi_hot_targets(const Dataset& dataset, const torch::Tensor& indices,
                                int64_t classes);

}  // namespace runner::data
