#include "data/sampler.hpp"

#include <algorithm>
#include <numeric>

#include "data/shard_order.hpp"
#include "runner/data/rng.hpp"
#include "runner/error.hpp"

namespace runner::data {
namespace {

// Stream keys no sample index can take, so the order never correlates with augmentation.
constexpr uint64_t kShuffleStream = ~uint64_t{0};
constexpr uint64_t kWeightedStream = ~uint64_t{0} - (uint64_t{1} << 32);

// `count` draws with replacement, index i with probability weights[i] / sum (inverse CDF).
std::vector<size_t> weighted_draws(const std::vector<double>& weights, size_t count, uint64_t seed,
                                   uint64_t epoch) {
  std::vector<double> cumulative(weights.size());
  std::partial_sum(weights.begin(), weights.end(), cumulative.begin());
  const double total = cumulative.empty() ? 0.0 : cumulative.back();
  if (!(total > 0)) throw Error("sampler: the sampling weights sum to zero");
  Rng rng(seed, epoch, kWeightedStream);
  std::vector<size_t> draws(count);
  for (size_t& d : draws) {
    const auto it = std::upper_bound(cumulative.begin(), cumulative.end(), rng.uniform() * total);
    d = std::min(static_cast<size_t>(it - cumulative.begin()), weights.size() - 1);
  }
  return draws;
}

}  // namespace

std::vector<size_t> shuffled_indices(size_t n, uint64_t seed, uint64_t epoch, uint64_t round) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  Rng rng(seed, epoch, kShuffleStream - round);
  for (size_t i = n; i > 1; --i)
    std::swap(order[i - 1],
              order[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(i - 1)))]);
  return order;
}

DistributedSampler::DistributedSampler(size_t dataset_size, SamplerOptions options)
    : dataset_size_(dataset_size), options_(std::move(options)) {
  if (options_.world_size == 0 || options_.rank >= options_.world_size)
    throw Error("sampler: rank " + std::to_string(options_.rank) + " is not below world size " +
                std::to_string(options_.world_size));
  if (options_.weights && options_.weights->size() != dataset_size)
    throw Error("sampler: " + std::to_string(options_.weights->size()) + " weights for " +
                std::to_string(dataset_size) + " samples");
  const size_t w = options_.world_size;
  const size_t m = options_.samples_per_epoch > 0 ? options_.samples_per_epoch : dataset_size;
  num_samples_ = options_.drop_last || reads_shards() ? m / w : (m + w - 1) / w;
}

bool DistributedSampler::reads_shards() const {
  return !options_.shards.sizes.empty() && !options_.weights;
}

size_t DistributedSampler::num_padding() const {
  if (options_.weights || reads_shards()) return 0;
  const size_t m = options_.samples_per_epoch > 0 ? options_.samples_per_epoch : dataset_size_;
  return total_size() > m ? total_size() - m : 0;
}

std::vector<SampledIndex> DistributedSampler::shard_indices(uint64_t epoch) const {
  ShardOrderOptions o;
  o.world_size = options_.world_size;
  o.shuffle = options_.shuffle;
  o.shuffle_buffer = options_.shards.shuffle_buffer;
  o.seed = options_.seed;
  o.per_rank = num_samples_;
  const auto ranks = shard_order(options_.shards.sizes, o, epoch);
  // Keys as indices() gives them: a sample read again (by this or an earlier rank) is a
  // further draw with its own augmentation stream.
  std::vector<uint32_t> seen(dataset_size_, 0);
  std::vector<SampledIndex> mine;
  for (size_t r = 0; r < ranks.size(); ++r)
    for (size_t index : ranks[r]) {
      const uint64_t draw = seen[index]++;
      if (r == options_.rank)
        mine.push_back({index, false, index + draw * static_cast<uint64_t>(dataset_size_)});
    }
  return mine;
}

std::vector<SampledIndex> DistributedSampler::indices(uint64_t epoch) const {
  if (reads_shards()) return shard_indices(epoch);
  const size_t n = dataset_size_;
  std::vector<size_t> order;
  if (options_.weights) {
    order = weighted_draws(*options_.weights, total_size(), options_.seed, epoch);
  } else {
    const size_t m = options_.samples_per_epoch > 0 ? options_.samples_per_epoch : n;
    for (uint64_t round = 0; order.size() < m && n > 0; ++round) {
      std::vector<size_t> next(n);
      if (options_.shuffle) {
        next = shuffled_indices(n, options_.seed, epoch, round);
      } else {
        std::iota(next.begin(), next.end(), size_t{0});
      }
      order.insert(order.end(), next.begin(), next.end());
    }
    order.resize(std::min(order.size(), m));
  }
  std::vector<SampledIndex> mine;
  if (order.empty()) return mine;
  mine.reserve(num_samples_);
  // The draw of each index so far in the global order: a repeat gets a key of its own.
  std::vector<uint32_t> seen(n, 0);
  for (size_t pos = 0; pos < total_size(); ++pos) {
    // Positions past the end wrap to the start, as PyTorch pads with indices[:padding].
    const bool padding = pos >= order.size();
    const size_t index = order[pos % order.size()];
    const uint64_t draw = padding ? 0 : seen[index]++;
    if (pos % options_.world_size == options_.rank)
      mine.push_back({index, padding, index + draw * static_cast<uint64_t>(n)});
  }
  return mine;
}

}  // namespace runner::data
