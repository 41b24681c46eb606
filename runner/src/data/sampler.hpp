#pragma once
// Which dataset indices a rank visits in an epoch, with PyTorch DistributedSampler's semantics.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace runner::data {

/// One position of a rank's epoch: the dataset index and whether it is padding (a wrapped
/// repeat of an earlier index that exists only to give every rank the same count).
struct SampledIndex {
  size_t index = 0;
  bool padding = false;
};

struct SamplerOptions {
  size_t world_size = 1;
  size_t rank = 0;
  bool shuffle = false;
  uint64_t seed = 0;
  /// true: drop the tail so the size divides by world_size (no padding); false: pad by wrapping.
  bool drop_last = false;
};

class DistributedSampler {
 public:
  /// Requires rank < world_size and world_size >= 1 (else throws runner::Error).
  DistributedSampler(size_t dataset_size, SamplerOptions options);

  /// Samples per rank per epoch: ceil(n / W), or floor(n / W) with drop_last.
  size_t num_samples() const { return num_samples_; }
  /// num_samples() * world_size.
  size_t total_size() const { return num_samples_ * options_.world_size; }
  /// Padding positions across all ranks (total_size() - dataset size, 0 with drop_last).
  size_t num_padding() const;

  /// This rank's indices for `epoch`: the permutation of 0..n-1 from (seed, epoch) (identity
  /// without shuffle), padded by wrapping to total_size(), then positions rank, rank + W, ...
  std::vector<SampledIndex> indices(uint64_t epoch) const;

  const SamplerOptions& options() const { return options_; }
  size_t dataset_size() const { return dataset_size_; }

 private:
  size_t dataset_size_;
  SamplerOptions options_;
  size_t num_samples_;
};

/// The permutation of 0..n-1 for (seed, epoch): Fisher-Yates driven by Rng, identical on every
/// rank and thread.
std::vector<size_t> shuffled_indices(size_t n, uint64_t seed, uint64_t epoch);

}  // namespace runner::data
