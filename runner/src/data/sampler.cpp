#include "data/sampler.hpp"

#include <numeric>

#include "runner/data/rng.hpp"
#include "runner/error.hpp"

namespace runner::data {

std::vector<size_t> shuffled_indices(size_t n, uint64_t seed, uint64_t epoch) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  // A stream key no sample index can take, so shuffling never correlates with augmentation.
  Rng rng(seed, epoch, ~uint64_t{0});
  for (size_t i = n; i > 1; --i)
    std::swap(order[i - 1],
              order[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(i - 1)))]);
  return order;
}

DistributedSampler::DistributedSampler(size_t dataset_size, SamplerOptions options)
    : dataset_size_(dataset_size), options_(options) {
  if (options_.world_size == 0 || options_.rank >= options_.world_size)
    throw Error("sampler: rank " + std::to_string(options_.rank) + " is not below world size " +
                std::to_string(options_.world_size));
  const size_t w = options_.world_size;
  num_samples_ = options_.drop_last ? dataset_size / w : (dataset_size + w - 1) / w;
}

size_t DistributedSampler::num_padding() const {
  return total_size() > dataset_size_ ? total_size() - dataset_size_ : 0;
}

std::vector<SampledIndex> DistributedSampler::indices(uint64_t epoch) const {
  std::vector<size_t> order;
  if (options_.shuffle) {
    order = shuffled_indices(dataset_size_, options_.seed, epoch);
  } else {
    order.resize(dataset_size_);
    std::iota(order.begin(), order.end(), size_t{0});
  }
  std::vector<SampledIndex> mine;
  mine.reserve(num_samples_);
  for (size_t pos = options_.rank; pos < total_size(); pos += options_.world_size) {
    // Positions past the end wrap to the start, as PyTorch pads with indices[:padding].
    mine.push_back({order[pos % dataset_size_], pos >= dataset_size_});
  }
  return mine;
}

}  // namespace runner::data
