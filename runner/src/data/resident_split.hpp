#pragma once
// A split decoded once into one uint8 tensor on the device where batches are made (data.device):
// batches are then rows picked by the sampler's indices, no per-sample loading, no copy to the
// device per step. Fashion-MNIST's 70000 images of 28x28 are 55 MB.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "data/pipeline.hpp"
#include "runner/data/dataset.hpp"

namespace runner::data {

struct ResidentSplit {
  torch::Tensor images;  ///< uint8 [N, C, H, W]
  torch::Tensor labels;  ///< int64 [N], -1 for unlabelled samples
};

/// Bytes the decoded split takes (from its first sample: size x channels x N), 0 when empty.
int64_t resident_bytes(const Dataset& dataset);

/// Decodes every sample of `dataset` into a ResidentSplit on `device`. Throws DataError naming the
/// sample whose image is not u8 or differs in size or channels from the first (such a dataset
/// needs the per-sample loader: data.device: loader).
std::shared_ptr<const ResidentSplit> make_resident_split(const Dataset& dataset,
                                                         const torch::Device& device);

/// What data.device auto decides for a split: kept on the device (`split` set), or made by the
/// loader for the reason in `why_not`.
struct ResidentChoice {
  std::shared_ptr<const ResidentSplit> split;
  std::string why_not;  ///< e.g. "data.train_transforms[0] shift_scale_rotate has no batched
                        ///< form with border_mode wrap"
};

/// Keeps `dataset` on `device` when its decoded images take at most `share` of `device_bytes`,
/// every pipeline (with where it is configured) has batched forms, and every image is u8 of the
/// first one's size; else says why not (nothing is thrown for those).
ResidentChoice choose_resident(
    const Dataset& dataset, const std::vector<std::pair<const Pipeline*, std::string>>& pipelines,
    const torch::Device& device, double device_bytes, double share);

}  // namespace runner::data
