// Points of a --parallel sweep on a GPU machine: each takes as many GPUs as it has local ranks,
// never one another point holds, and gets them back when it ends.

#include <gtest/gtest.h>

#include "sweep/gpu_pool.hpp"

namespace runner::sweep {
namespace {

TEST(GpuPool, PointsNeverShareAGpu) {
  GpuPool pool(4);
  const auto a = pool.take(2);
  const auto b = pool.take(1);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, (std::vector<int>{0, 1}));
  EXPECT_EQ(*b, (std::vector<int>{2}));
  EXPECT_FALSE(pool.take(2)) << "only GPU 3 is free";
  const auto c = pool.take(1);
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, (std::vector<int>{3}));
  EXPECT_FALSE(pool.take(1));
}

TEST(GpuPool, GivenBackGpusServeTheNextPoint) {
  GpuPool pool(2);
  const auto a = pool.take(2);
  ASSERT_TRUE(a);
  EXPECT_FALSE(pool.take(1));
  pool.give_back(*a);
  const auto b = pool.take(2);
  ASSERT_TRUE(b);
  EXPECT_EQ(*b, (std::vector<int>{0, 1}));
}

TEST(GpuPool, NoGpusNothingToTake) {
  GpuPool pool(0);
  EXPECT_EQ(pool.size(), 0);
  EXPECT_FALSE(pool.take(1));
}

}  // namespace
}  // namespace runner::sweep
