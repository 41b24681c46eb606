#pragma once
// A split decoded once into one uint8 tensor on the device where batches are made (data.device):
// batches are then rows picked by the sampler's indices, no per-sample loading, no copy to the
// device per step. Fashion-MNIST's 70000 images of 28x28 are 55 MB.

#include <cstdint>
#include <memory>

#include <torch/types.h>

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

}  // namespace runner::data
