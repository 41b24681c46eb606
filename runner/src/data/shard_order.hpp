#pragma once
// The order a training epoch reads a sharded dataset (webdataset) in, as WebDataset's pipeline
// reads it (shards shuffled, split by rank, a shuffle buffer), computed up front as indices so
// that the loader's threads, resume mid-epoch and the checks see a plain list:
//  - the epoch's shard order is a permutation from (seed, epoch) (shard order without shuffle);
//  - rank r reads the shards at positions r, r + W, r + 2W, ... of that order, each whole and
//    in archive order, continuing into the next permutation (round) when its shards hold fewer
//    samples than its share;
//  - its share is samples_per_epoch / W (default: all samples / W), rounded down, so every rank
//    takes as many steps;
//  - a shuffle buffer of B samples (B > 1, shuffle on) mixes the rank's stream locally: each
//    sample read replaces a random one of the buffer, which is passed on.
// When the shards divide evenly (each rank's shards hold its share), every sample is read once an
// epoch, and nothing is read twice; otherwise ranks with fewer samples read into the next
// round's shards and others stop inside their last shard.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace runner::data {

struct ShardOrderOptions {
  size_t world_size = 1;
  bool shuffle = true;
  size_t shuffle_buffer = 0;
  uint64_t seed = 0;
  size_t per_rank = 0;  ///< samples each rank reads this epoch
};

/// Every rank's dataset indices for `epoch` over shards of `shard_sizes` samples (shard k holds
/// the next shard_sizes[k] indices): element r is rank r's list of per_rank indices. Empty
/// lists when there is no sample.
std::vector<std::vector<size_t>> shard_order(const std::vector<size_t>& shard_sizes,
                                             const ShardOrderOptions& options, uint64_t epoch);

}  // namespace runner::data
