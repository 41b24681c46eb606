#pragma once
// Which dataset indices a rank visits in an epoch: PyTorch DistributedSampler's semantics, or
// draws with replacement in proportion to per-sample weights (WeightedRandomSampler, as Lightning
// wraps it for several ranks), for an epoch of the dataset's size or of samples_per_epoch.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "runner/data/dataset.hpp"

namespace runner::data {

/// One position of a rank's epoch: the dataset index and whether it is padding (a wrapped
/// repeat of an earlier index that exists only to give every rank the same count).
struct SampledIndex {
  size_t index = 0;
  bool padding = false;
  /// The augmentation stream of this visit: the index itself, and a key of its own for each
  /// further draw of the same index in the epoch (an oversampled image is augmented anew).
  uint64_t key = 0;
};

struct SamplerOptions {
  size_t world_size = 1;
  size_t rank = 0;
  bool shuffle = false;
  uint64_t seed = 0;
  /// true: drop the tail so the size divides by world_size (no padding); false: pad by wrapping.
  bool drop_last = false;
  /// Samples of an epoch over all ranks; 0: the dataset's size. A permutation is cut or followed
  /// by further permutations to reach it.
  size_t samples_per_epoch = 0;
  /// One weight per sample: each position is an independent draw with replacement, in
  /// proportion to them (no padding). Empty: a permutation (or dataset order without shuffle).
  std::shared_ptr<const std::vector<double>> weights;
  /// A sharded dataset's layout: the epoch reads shard by shard (shard_order.hpp), each rank
  /// its share rounded down (no padding). Unused with weights.
  ShardLayout shards;
};

class DistributedSampler {
 public:
  /// Requires rank < world_size and world_size >= 1 (else throws runner::Error).
  DistributedSampler(size_t dataset_size, SamplerOptions options);

  /// Samples per rank per epoch: ceil(m / W), or floor(m / W) with drop_last, for m the epoch's
  /// samples (samples_per_epoch, else the dataset's size).
  size_t num_samples() const { return num_samples_; }
  /// num_samples() * world_size.
  size_t total_size() const { return num_samples_ * options_.world_size; }
  /// Padding positions across all ranks (total_size() - dataset size, 0 with drop_last).
  size_t num_padding() const;

  /// This rank's indices for `epoch`: the permutation of 0..n-1 from (seed, epoch) (identity
  /// without shuffle; with weights, total_size() draws from (seed, epoch)), padded by wrapping
  /// to total_size(), then positions rank, rank + W, ... Every rank computes the same global
  /// order, so the ranks' shares never overlap.
  std::vector<SampledIndex> indices(uint64_t epoch) const;

  const SamplerOptions& options() const { return options_; }
  size_t dataset_size() const { return dataset_size_; }
  /// Whether epochs read shard by shard (options().shards, without weights).
  bool reads_shards() const;

 private:
  std::vector<SampledIndex> shard_indices(uint64_t epoch) const;

  size_t dataset_size_;
  SamplerOptions options_;
  size_t num_samples_;
};

/// The permutation of 0..n-1 for (seed, epoch): Fisher-Yates driven by Rng, identical on every
/// rank and thread.
/// `round` > 0: a further permutation of the same epoch (samples_per_epoch above n).
std::vector<size_t> shuffled_indices(size_t n, uint64_t seed, uint64_t epoch, uint64_t round = 0);

}  // namespace runner::data
