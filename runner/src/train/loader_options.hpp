#pragma once
// The loader settings of one rank's pass, as the data section sets them: what the training loop
// (batch_source.hpp) and the commands that reproduce a rank's loader without its process group
// (show-batch, bench-data: run/rank_loader.hpp) share.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "config/experiment_options.hpp"
#include "data/loader.hpp"

namespace runner::train {

/// A pass by rank `rank` of `world_size` processes in batches of `batch_size`: for training
/// (`training_split` non-null) shuffled from (seed, epoch) through `sampling_weights`
/// (data.sampler; null: a permutation) or shard by shard, data.samples_per_epoch, whole
/// batches; else dataset order. `classes`: the multi-hot width of task: multilabel. Where
/// batches are made (data.device) and pinned memory are the caller's to set.
data::LoaderOptions pass_loader_options(
    const config::DataOptions& data, uint64_t seed, const data::Dataset* training_split,
    int64_t classes, size_t batch_size, size_t rank, size_t world_size,
    std::shared_ptr<const std::vector<double>> sampling_weights);

}  // namespace runner::train
