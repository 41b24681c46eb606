// The batch-size search behind train.batch_size: auto, driven by fake trial functions.

#include <algorithm>
#include <functional>

#include <gtest/gtest.h>

#include "runner/error.hpp"
#include "train/auto_batch.hpp"

namespace runner::train {
namespace {

// A trial that fits up to `limit` and counts the sizes it was asked for.
struct FakeMemory {
  int64_t limit;
  std::vector<int64_t> asked;
  bool operator()(int64_t batch) {
    asked.push_back(batch);
    return batch <= limit;
  }
};

TEST(AutoBatch, FindsTheLargestSizeThatFits) {
  for (int64_t limit : {1, 2, 3, 7, 100, 511, 512, 513, 1000}) {
    FakeMemory memory{limit, {}};
    EXPECT_EQ(search_batch_size(4096, std::ref(memory), nullptr), limit) << "limit " << limit;
    // It never tries a size twice.
    auto sorted = memory.asked;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "limit " << limit;
  }
}

TEST(AutoBatch, StopsAtTheMaximumWhenEverythingFits) {
  FakeMemory memory{1'000'000, {}};
  EXPECT_EQ(search_batch_size(300, std::ref(memory), nullptr), 300);
  EXPECT_EQ(memory.asked.back(), 300);
  for (int64_t b : memory.asked) EXPECT_LE(b, 300);
}

TEST(AutoBatch, FailsClearlyWhenNothingFits) {
  FakeMemory memory{0, {}};
  try {
    search_batch_size(64, std::ref(memory), nullptr);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("batch of 1"), std::string::npos) << e.what();
  }
}

// A batch of 1 breaks BatchNorm after global pooling in train mode: it is tried only when 2
// does not fit (and max 1 means 1).
TEST(AutoBatch, TriesOneSampleOnlyWhenTwoDoNotFit) {
  FakeMemory roomy{64, {}};
  EXPECT_EQ(search_batch_size(64, std::ref(roomy), nullptr), 64);
  EXPECT_EQ(std::count(roomy.asked.begin(), roomy.asked.end(), 1), 0);
  EXPECT_EQ(roomy.asked.front(), 2);
  FakeMemory tight{1, {}};
  EXPECT_EQ(search_batch_size(64, std::ref(tight), nullptr), 1);
  EXPECT_EQ(tight.asked, (std::vector<int64_t>{2, 1}));
  FakeMemory single{64, {}};
  EXPECT_EQ(search_batch_size(1, std::ref(single), nullptr), 1);
  EXPECT_EQ(single.asked, (std::vector<int64_t>{1}));
}

// Two "ranks" with different memory: each trial's outcome is agreed (MIN) before it is used,
// so both follow the same path and end on the size the smaller one fits.
TEST(AutoBatch, RanksAgreeOnTheSmallestFit) {
  FakeMemory rank0{700, {}}, rank1{300, {}};
  std::vector<BatchTrial> trials;
  // Simulated all-reduce MIN: rank 1's answer for the same size is combined with rank 0's.
  int64_t current = 0;
  auto fits0 = [&](int64_t b) {
    current = b;
    return rank0(b);
  };
  auto agree = [&](bool ok0) { return ok0 && rank1(current); };
  EXPECT_EQ(search_batch_size(4096, fits0, agree, &trials), 300);
  EXPECT_EQ(rank0.asked, rank1.asked);
  ASSERT_FALSE(trials.empty());
  for (const auto& t : trials) EXPECT_EQ(t.fits, t.batch <= 300) << "batch " << t.batch;
}

}  // namespace
}  // namespace runner::train
