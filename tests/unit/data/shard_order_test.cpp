// A sharded dataset's training epoch: each rank reads whole shards of its own, every sample once
// when the shards divide evenly, the order drawn from (seed, epoch), a shuffle buffer that mixes
// locally, and the sampler handing exactly that order to the loader.

#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "data/sampler.hpp"
#include "data/shard_order.hpp"

namespace runner::data {
namespace {

const std::vector<size_t> kEightShards(8, 250);  // 2,000 samples

ShardOrderOptions options(size_t world, size_t buffer, size_t per_rank) {
  ShardOrderOptions o;
  o.world_size = world;
  o.shuffle_buffer = buffer;
  o.seed = 7;
  o.per_rank = per_rank;
  return o;
}

TEST(ShardOrder, TwoRanksReadEverySampleOnceFromWholeShardsOfTheirOwn) {
  const auto ranks = shard_order(kEightShards, options(2, 0, 1000), 0);
  ASSERT_EQ(ranks.size(), 2u);
  std::set<size_t> seen;
  for (const auto& rank : ranks) {
    ASSERT_EQ(rank.size(), 1000u);
    std::set<size_t> shards;
    for (size_t i = 0; i < rank.size(); ++i) {
      seen.insert(rank[i]);
      shards.insert(rank[i] / 250);
      if (i % 250) EXPECT_EQ(rank[i], rank[i - 1] + 1) << "a shard is read in archive order";
    }
    EXPECT_EQ(shards.size(), 4u) << "4 whole shards a rank";
  }
  EXPECT_EQ(seen.size(), 2000u) << "every sample once an epoch";
}

TEST(ShardOrder, TheOrderIsTheSeedsAndTheEpochs) {
  EXPECT_EQ(shard_order(kEightShards, options(2, 100, 1000), 3),
            shard_order(kEightShards, options(2, 100, 1000), 3));
  EXPECT_NE(shard_order(kEightShards, options(2, 100, 1000), 3),
            shard_order(kEightShards, options(2, 100, 1000), 4));
  auto unshuffled = options(2, 100, 1000);
  unshuffled.shuffle = false;
  const auto plain = shard_order(kEightShards, unshuffled, 5);
  EXPECT_EQ(plain[0].front(), 0u);
  EXPECT_EQ(plain[1].front(), 250u) << "rank 1 reads the second shard first";
}

TEST(ShardOrder, TheShuffleBufferMixesLocallyAndKeepsTheSamples) {
  const auto plain = shard_order(kEightShards, options(2, 0, 1000), 1);
  const auto mixed = shard_order(kEightShards, options(2, 200, 1000), 1);
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_NE(mixed[r], plain[r]);
    auto a = mixed[r], b = plain[r];
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    EXPECT_EQ(a, b) << "the same samples, mixed";
    // A sample leaves the buffer after it was read: never before its place in the stream.
    for (size_t i = 0; i < 800; ++i) {
      const size_t read_at = static_cast<size_t>(
          std::find(plain[r].begin(), plain[r].end(), mixed[r][i]) - plain[r].begin());
      EXPECT_LE(read_at, i + 200) << "sample out " << i;
    }
  }
}

TEST(ShardOrder, UnevenShardsGiveEveryRankTheSameShare) {
  const auto ranks = shard_order(kEightShards, options(3, 0, 2000 / 3), 0);
  for (const auto& rank : ranks) EXPECT_EQ(rank.size(), 666u);
  // 8 shards over 3 ranks: ranks 0 and 1 take 3 shards (stopping inside the third), rank 2 takes
  // 2 and reads on into the next round's.
  std::set<size_t> shards_of_2;
  for (size_t i : ranks[2]) shards_of_2.insert(i / 250);
  EXPECT_EQ(shards_of_2.size(), 3u);
}

TEST(ShardOrder, TheSamplerHandsTheLoaderThatOrderWithKeysForRepeats) {
  SamplerOptions o;
  o.world_size = 2;
  o.rank = 1;
  o.shuffle = true;
  o.seed = 7;
  o.drop_last = true;
  o.shards = {kEightShards, 50};
  const DistributedSampler sampler(2000, o);
  EXPECT_TRUE(sampler.reads_shards());
  EXPECT_EQ(sampler.num_samples(), 1000u);
  EXPECT_EQ(sampler.num_padding(), 0u);
  const auto mine = sampler.indices(2);
  const auto want = shard_order(kEightShards, options(2, 50, 1000), 2)[1];
  ASSERT_EQ(mine.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(mine[i].index, want[i]);
    EXPECT_EQ(mine[i].key, want[i]) << "read once: the index is its key";
  }
  o.samples_per_epoch = 3000;  // more than the shards hold: a second round, its repeats keyed apart
  const auto more = DistributedSampler(2000, o).indices(0);
  ASSERT_EQ(more.size(), 1500u);
  std::set<uint64_t> keys;
  for (const auto& s : more) keys.insert(s.key);
  EXPECT_EQ(keys.size(), 1500u);
}

}  // namespace
}  // namespace runner::data
