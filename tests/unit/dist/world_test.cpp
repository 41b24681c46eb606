#include "dist/world.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "dist/data_parallel.hpp"
#include "launch/spawn.hpp"
#include "runner/error.hpp"

namespace runner::dist {
namespace {

TEST(SingleWorld, CollectivesAreIdentities) {
  auto world = World::single();
  EXPECT_FALSE(world->distributed());
  EXPECT_TRUE(world->is_main());
  EXPECT_EQ(world->backend(), "none");
  world->barrier();
  auto t = torch::tensor({1.0f, 2.0f});
  world->all_reduce_(t, ReduceOp::kAvg);
  EXPECT_TRUE(torch::equal(t, torch::tensor({1.0f, 2.0f})));
  EXPECT_EQ(world->all_reduce(3.5, ReduceOp::kSum), 3.5);
  auto gathered = world->all_gather(t);
  EXPECT_EQ(gathered.sizes(), (std::vector<int64_t>{1, 2}));
  int calls = 0;
  world->main_process_first([&] { ++calls; });
  EXPECT_EQ(calls, 1);
}

TEST(SingleWorld, GatherForMetricsDropsPadding) {
  auto world = World::single();
  auto values = torch::arange(6).reshape({3, 2});
  auto valid = torch::tensor({true, true, false});
  auto kept = gather_for_metrics(*world, values, valid);
  EXPECT_TRUE(torch::equal(kept, values.slice(0, 0, 2)));
  EXPECT_THROW(gather_for_metrics(*world, values, torch::tensor({true})), Error);
}

TEST(GatherOrder, InterleavesRanksIntoDatasetOrder) {
  // 3 ranks, batch 2, dataset of 5: rank r holds positions r + 3*t; positions >= 5 are padding.
  const int w = 3, b = 2, n = 5;
  auto gathered = torch::empty({w, b, 1}, torch::kLong);
  auto valid = torch::empty({w, b}, torch::kBool);
  for (int r = 0; r < w; ++r) {
    for (int t = 0; t < b; ++t) {
      int position = r + w * t;
      gathered[r][t][0] = position % n;
      valid[r][t] = position < n;
    }
  }
  auto rows = interleave_gathered(gathered, valid);
  EXPECT_TRUE(torch::equal(rows.flatten(), torch::arange(n)));
}

TEST(WorldInit, WorldOfOneNeedsNoProcessGroup) {
  launch::WorldEnv env;
  env.master_port = 1;  // never contacted
  auto world = World::init(env, WorldOptions{});
  EXPECT_FALSE(world->distributed());
  EXPECT_EQ(world->impl(), nullptr);
}

TEST(WorldInit, GpuIdsPickTheCudaDeviceOfEachLocalRank) {
  launch::WorldEnv env;
  WorldOptions options;
  EXPECT_EQ(World::init(env, options)->cuda_index(), 0);  // no gpu_ids: cuda:local_rank
  options.gpu_ids = {3, 1};
  EXPECT_EQ(World::init(env, options)->cuda_index(), 3);
  env.local_rank = 1;
  env.local_world_size = 2;
  EXPECT_EQ(World::init(env, options)->cuda_index(), 1);
  options.gpu_ids = {3};  // one id for two local ranks: only an error where a GPU is used
  EXPECT_EQ(World::init(env, options)->cuda_index(), -1);
  EXPECT_NE(gpu_ids_too_short(env, options.gpu_ids)
                .find("launch.gpu_ids lists 1 GPU(s) for 2 local ranks"),
            std::string::npos);
}

TEST(WorldInit, UnknownBackendIsAConfigError) {
  WorldOptions options;
  options.backend = "mpi";
  EXPECT_THROW(World::init(launch::WorldEnv{}, options), ConfigError);
  options.backend = "nccl";  // this machine has no CUDA
  EXPECT_THROW(World::init(launch::WorldEnv{}, options), ConfigError);
}

TEST(WorldInit, BusyPortNamesHostAndPort) {
  int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(holder, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  ::getsockname(holder, reinterpret_cast<sockaddr*>(&address), &length);
  const int port = ntohs(address.sin_port);

  launch::WorldEnv env;
  env.world_size = 2;
  env.local_world_size = 2;
  env.master_port = port;
  WorldOptions options;
  options.timeout_s = 2;
  try {
    World::init(env, options);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("in use"), std::string::npos) << e.what();
  }
  ::close(holder);
}

TEST(WorldInit, UnreachableMasterNamesHostAndPort) {
  launch::WorldEnv env;
  env.rank = 1;
  env.world_size = 2;
  env.local_rank = 1;
  env.local_world_size = 2;
  env.master_port = launch::pick_free_port();  // nobody listens there
  WorldOptions options;
  options.timeout_s = 1;
  try {
    World::init(env, options);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(env.master_port)),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 1 cannot reach"), std::string::npos) << e.what();
  }
}

TEST(DataParallelSingle, LeavesTrainingUntouchedAndDropsGradients) {
  auto world = World::single();
  auto model = torch::nn::Linear(3, 2);
  DataParallel dp(world, model.ptr());
  dp.before_forward();
  auto loss = model->forward(torch::ones({4, 3})).sum();
  dp.before_backward({loss});
  loss.backward();
  auto grad = model->weight.grad();
  EXPECT_TRUE(torch::allclose(grad, torch::full({2, 3}, 4.0f)));
  dp.zero_grad();
  // Dropped, as zero_grad(set_to_none=True): the next backward writes instead of adding.
  EXPECT_FALSE(model->weight.grad().defined());
  auto again = model->forward(torch::ones({4, 3})).sum();
  dp.before_backward({again});
  again.backward();
  EXPECT_TRUE(torch::allclose(model->weight.grad(), torch::full({2, 3}, 4.0f)));
  DataParallelOptions bad;
  bad.bucket_cap_mb = 0;
  EXPECT_THROW(DataParallel(world, model.ptr(), bad), ConfigError);
}

// What the main process alone does on disk, every rank learns: its error, with its exit code
// (a config problem stays exit 2), so that every rank ends with the same line.
TEST(World, OnMainProcessGivesItsErrorToEveryRank) {
  auto world = World::single();
  bool ran = false;
  on_main_process(*world, [&] { ran = true; });
  EXPECT_TRUE(ran);
  try {
    on_main_process(*world, [] { throw ConfigError("output.run_dir X holds another run"); });
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), kExitUsage);
    EXPECT_STREQ(e.what(), "output.run_dir X holds another run");
  }
  EXPECT_EQ(broadcast_text(*world, "run dir"), "run dir");
}

}  // namespace
}  // namespace runner::dist
