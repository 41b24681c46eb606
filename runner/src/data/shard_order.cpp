#include "data/shard_order.hpp"

#include <numeric>

#include "data/sampler.hpp"
#include "runner/data/rng.hpp"

namespace runner::data {
namespace {

// Streams no sample index or shuffle round takes (sampler.cpp's start at ~0 and go down).
constexpr uint64_t kBufferStream = ~uint64_t{0} - (uint64_t{1} << 33);

// The buffer's mix of `stream`, as WebDataset's shuffle(): a full buffer hands on a random one
// of its samples for each one read, then empties in random order.
std::vector<size_t> buffer_shuffle(const std::vector<size_t>& stream, size_t buffer, Rng& rng) {
  std::vector<size_t> held, out;
  out.reserve(stream.size());
  for (size_t index : stream) {
    if (held.size() < buffer) {
      held.push_back(index);
      continue;
    }
    const auto k = static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(held.size() - 1)));
    out.push_back(held[k]);
    held[k] = index;
  }
  while (!held.empty()) {
    const auto k = static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(held.size() - 1)));
    out.push_back(held[k]);
    held[k] = held.back();
    held.pop_back();
  }
  return out;
}

}  // namespace

std::vector<std::vector<size_t>> shard_order(const std::vector<size_t>& shard_sizes,
                                             const ShardOrderOptions& options, uint64_t epoch) {
  const size_t shards = shard_sizes.size(), world = std::max<size_t>(1, options.world_size);
  std::vector<size_t> first(shards, 0);  // each shard's first index
  for (size_t k = 1; k < shards; ++k) first[k] = first[k - 1] + shard_sizes[k - 1];
  const size_t total = shards ? first.back() + shard_sizes.back() : 0;
  std::vector<std::vector<size_t>> ranks(world);
  if (total == 0 || options.per_rank == 0) return ranks;

  // The shard at position p of the epoch's endless order: rounds of permutations.
  std::vector<std::vector<size_t>> rounds;
  const auto shard_at = [&](size_t position) {
    const size_t round = position / shards;
    while (rounds.size() <= round) {
      std::vector<size_t> order(shards);
      if (options.shuffle) {
        order = shuffled_indices(shards, options.seed, epoch, rounds.size());
      } else {
        std::iota(order.begin(), order.end(), size_t{0});
      }
      rounds.push_back(std::move(order));
    }
    return rounds[round][position % shards];
  };
  for (size_t r = 0; r < world; ++r) {
    std::vector<size_t>& stream = ranks[r];
    stream.reserve(options.per_rank);
    for (size_t position = r; stream.size() < options.per_rank; position += world) {
      const size_t k = shard_at(position);
      for (size_t i = 0; i < shard_sizes[k] && stream.size() < options.per_rank; ++i)
        stream.push_back(first[k] + i);
    }
    if (options.shuffle && options.shuffle_buffer > 1) {
      Rng rng(options.seed, epoch, kBufferStream - r);
      stream = buffer_shuffle(stream, options.shuffle_buffer, rng);
    }
  }
  return ranks;
}

}  // namespace runner::data
