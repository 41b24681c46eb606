// Points of a --parallel sweep on a GPU machine: each takes as many GPUs as it has local ranks,
// never one another point holds, and gets them back when it ends.

#include <gtest/gtest.h>

#include "runner/error.hpp"
#include "sweep/gpu_pool.hpp"
#include "sweep/sweep_file.hpp"
#include "temp_files.hpp"

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

// What a point or a search's trial takes to run beside others: a GPU per local rank on CUDA
// (none where it names its own), else its share of the cores; a free rendezvous port always.
TEST(PointNeeds, GpusPerRankOnCudaElseTheCoresShare) {
  runner::testing::TempDir dir;
  dir.write("base.yaml",
            "name: base\ndata: {dataset: {name: synthetic}}\n"
            "model: {backbone: small_cnn, in_chans: 1, num_classes: 10}\n"
            "optimizer: {name: adam, lr: 0.001}\ntrain: {best: {metric: loss}}\n");
  const Sweep sweep = load_sweep(dir.write(
      "s.yaml",
      "base: base.yaml\npoints:\n"
      "  - {launch.device: cuda, launch.num_processes: 2}\n"
      "  - {launch.device: cuda, launch.num_processes: 2, launch.gpu_ids: [0, 0]}\n"
      "  - {launch.device: auto, launch.num_processes: 2}\n"
      "  - {launch.device: cpu, launch.num_processes: 1, launch.threads_per_process: 3}\n"));
  const PointNeeds cuda = needs_beside_others(sweep.points[0], 4, 16, 2);
  EXPECT_EQ(cuda.gpus, 2);
  EXPECT_EQ(cuda.overrides, (std::vector<std::string>{"launch.master_port=0"}));
  EXPECT_EQ(needs_beside_others(sweep.points[1], 4, 16, 2).gpus, 0) << "it names its GPUs";
  EXPECT_EQ(needs_beside_others(sweep.points[2], 2, 16, 2).gpus, 2) << "auto with GPUs here";
  const PointNeeds cpu = needs_beside_others(sweep.points[2], 0, 16, 2);
  EXPECT_EQ(cpu.gpus, 0);
  EXPECT_EQ(cpu.overrides,
            (std::vector<std::string>{"launch.master_port=0", "launch.threads_per_process=4"}));
  EXPECT_EQ(needs_beside_others(sweep.points[3], 0, 16, 2).overrides.size(), 1u)
      << "its own threads stay";
  EXPECT_THROW(needs_beside_others(sweep.points[0], 1, 16, 2), ConfigError);
  EXPECT_EQ(gpu_list({1, 3}), "[1,3]");
}

}  // namespace
}  // namespace runner::sweep
