// DistributedSampler: PyTorch's padding and ordering for uneven sizes.

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include <gtest/gtest.h>

#include "data/sampler.hpp"

namespace runner::data {
namespace {

std::vector<SampledIndex> take(size_t n, size_t world, size_t rank, bool shuffle, uint64_t epoch,
                               bool drop_last = false) {
  SamplerOptions o;
  o.world_size = world;
  o.rank = rank;
  o.shuffle = shuffle;
  o.seed = 42;
  o.drop_last = drop_last;
  return DistributedSampler(n, o).indices(epoch);
}

class SamplerUneven : public ::testing::TestWithParam<std::tuple<size_t, bool>> {};

TEST_P(SamplerUneven, PadsByWrappingAndDealsEveryWthPosition) {
  const auto [world, shuffle] = GetParam();
  const size_t n = 1001;
  const size_t per_rank = (n + world - 1) / world;  // 501 for 2 ranks, 334 for 3
  // Reassemble the global order from the ranks: position p belongs to rank p % W.
  std::vector<SampledIndex> global(per_rank * world);
  for (size_t r = 0; r < world; ++r) {
    const auto mine = take(n, world, r, shuffle, 7);
    ASSERT_EQ(mine.size(), per_rank);
    for (size_t k = 0; k < mine.size(); ++k) global[k * world + r] = mine[k];
  }
  // The first n positions are a permutation of 0..n-1, none marked padding.
  std::vector<size_t> first(n);
  for (size_t p = 0; p < n; ++p) {
    first[p] = global[p].index;
    EXPECT_FALSE(global[p].padding) << p;
  }
  std::vector<size_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i);
  // Without shuffle that permutation is the identity; with it, it is not.
  bool identity = true;
  for (size_t i = 0; i < n; ++i) identity = identity && first[i] == i;
  EXPECT_EQ(identity, !shuffle);
  // Padding repeats the start of the order, and is flagged.
  for (size_t p = n; p < global.size(); ++p) {
    EXPECT_TRUE(global[p].padding);
    EXPECT_EQ(global[p].index, first[p - n]);
  }
  EXPECT_EQ(global.size() - n, 1u);  // 1002 = 2 x 501 = 3 x 334
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, SamplerUneven,
                         ::testing::Combine(::testing::Values(size_t{2}, size_t{3}),
                                            ::testing::Bool()));

TEST(Sampler, WithoutShuffleRankRTakesRPlusMultiplesOfW) {
  const auto r1 = take(1001, 3, 1, false, 0);
  EXPECT_EQ(r1[0].index, 1u);
  EXPECT_EQ(r1[1].index, 4u);
  EXPECT_EQ(r1.back().index, 1000u);  // position 1000 = 1 + 3 * 333
  const auto r2 = take(1001, 3, 2, false, 0);
  EXPECT_EQ(r2.back().index, 0u);  // position 1001 wraps to index 0
  EXPECT_TRUE(r2.back().padding);
}

TEST(Sampler, ShuffleDependsOnSeedAndEpochOnly) {
  EXPECT_EQ(shuffled_indices(100, 1, 2), shuffled_indices(100, 1, 2));
  EXPECT_NE(shuffled_indices(100, 1, 2), shuffled_indices(100, 1, 3));
  EXPECT_NE(shuffled_indices(100, 1, 2), shuffled_indices(100, 2, 2));
  // Every rank sees the same permutation: rank 0 and rank 1 together cover it in order.
  const auto perm = shuffled_indices(10, 42, 5);
  const auto a = take(10, 2, 0, true, 5), b = take(10, 2, 1, true, 5);
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(a[k].index, perm[2 * k]);
    EXPECT_EQ(b[k].index, perm[2 * k + 1]);
  }
}

TEST(Sampler, DropLastDropsTheTailInsteadOfPadding) {
  SamplerOptions o;
  o.world_size = 3;
  o.drop_last = true;
  DistributedSampler s(1001, o);
  EXPECT_EQ(s.num_samples(), 333u);
  EXPECT_EQ(s.num_padding(), 0u);
  for (const auto& item : s.indices(0)) EXPECT_FALSE(item.padding);
  o.drop_last = false;
  EXPECT_EQ(DistributedSampler(1001, o).num_padding(), 1u);
}

TEST(Sampler, SmallDatasetsStillGiveEveryRankAnItem) {
  // 2 samples on 3 ranks: rank 2 gets a padded copy of sample 0.
  const auto r2 = take(2, 3, 2, false, 0);
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_EQ(r2[0].index, 0u);
  EXPECT_TRUE(r2[0].padding);
  EXPECT_TRUE(take(0, 2, 0, true, 0).empty());
}

// The global order of an epoch, reassembled from every rank's share.
std::vector<SampledIndex> global_order(size_t n, size_t world, const SamplerOptions& base,
                                       uint64_t epoch) {
  std::vector<std::vector<SampledIndex>> shares;
  for (size_t r = 0; r < world; ++r) {
    SamplerOptions o = base;
    o.world_size = world;
    o.rank = r;
    shares.push_back(DistributedSampler(n, o).indices(epoch));
  }
  std::vector<SampledIndex> global;
  for (size_t k = 0; k < shares[0].size(); ++k)
    for (size_t r = 0; r < world; ++r) global.push_back(shares[r].at(k));
  return global;
}

TEST(WeightedSampler, DrawsInProportionToTheWeightsWithFreshKeysForRepeats) {
  // 10 samples: index 0 weighs 7, the other nine 1/3 each: index 0 a 70% share.
  auto weights = std::make_shared<std::vector<double>>(10, 1.0 / 3.0);
  (*weights)[0] = 7;
  SamplerOptions o;
  o.seed = 3;
  o.shuffle = true;
  o.drop_last = true;
  o.samples_per_epoch = 4000;
  o.weights = weights;
  const auto global = global_order(10, 2, o, 1);
  ASSERT_EQ(global.size(), 4000u);
  size_t zeros = 0;
  std::set<uint64_t> keys;
  for (const auto& item : global) {
    zeros += item.index == 0;
    EXPECT_FALSE(item.padding);
    EXPECT_EQ(item.key % 10, item.index);  // a repeat's key is index + draw x n
    keys.insert(item.key);
  }
  EXPECT_NEAR(static_cast<double>(zeros) / 4000.0, 0.7, 0.03);
  EXPECT_EQ(keys.size(), global.size());  // every draw augmented from its own stream
  // The same draws on every call, others in another epoch.
  EXPECT_EQ(global_order(10, 2, o, 1)[17].key, global[17].key);
  size_t same = 0;
  const auto next_epoch = global_order(10, 2, o, 2);
  for (size_t p = 0; p < global.size(); ++p) same += next_epoch[p].key == global[p].key;
  EXPECT_LT(same, global.size() / 2);
}

TEST(WeightedSampler, RanksSplitOneSetOfDrawsWhateverTheWorldSize) {
  auto weights = std::make_shared<std::vector<double>>(50, 1.0);
  SamplerOptions o;
  o.seed = 9;
  o.drop_last = true;
  o.weights = weights;
  o.samples_per_epoch = 60;
  // 2 and 3 ranks deal the same 60 draws (world size changes who gets which, not the draws).
  const auto two = global_order(50, 2, o, 0), three = global_order(50, 3, o, 0);
  ASSERT_EQ(two.size(), 60u);
  ASSERT_EQ(three.size(), 60u);
  for (size_t p = 0; p < 60; ++p) EXPECT_EQ(two[p].index, three[p].index) << p;
}

TEST(Sampler, SamplesPerEpochCutsOrRepeatsThePermutation) {
  SamplerOptions o;
  o.shuffle = true;
  o.seed = 5;
  o.drop_last = true;
  o.samples_per_epoch = 25;
  const auto global = global_order(10, 1, o, 4);
  ASSERT_EQ(global.size(), 25u);
  // Each block of 10 is a permutation of its own; the last is cut at 5.
  for (size_t block = 0; block < 2; ++block) {
    std::set<size_t> seen;
    for (size_t p = block * 10; p < block * 10 + 10; ++p) seen.insert(global[p].index);
    EXPECT_EQ(seen.size(), 10u);
  }
  std::vector<size_t> first, second;
  for (size_t p = 0; p < 10; ++p) first.push_back(global[p].index);
  for (size_t p = 10; p < 20; ++p) second.push_back(global[p].index);
  EXPECT_EQ(first, shuffled_indices(10, 5, 4));  // the first round is the usual permutation
  EXPECT_NE(first, second);
  for (size_t p = 0; p < 10; ++p) EXPECT_EQ(global[p].key, global[p].index);
  for (size_t p = 10; p < 20; ++p) EXPECT_EQ(global[p].key, global[p].index + 10);
  for (size_t p = 20; p < 25; ++p) EXPECT_EQ(global[p].key, global[p].index + 20);
  o.samples_per_epoch = 4;
  EXPECT_EQ(global_order(10, 2, o, 4).size(), 4u);
}

}  // namespace
}  // namespace runner::data
