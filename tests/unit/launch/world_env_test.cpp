#include "launch/world_env.hpp"

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "runner/error.hpp"

namespace runner::launch {
namespace {

// An environment made of exactly these variables.
EnvLookup env_of(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

TEST(WorldEnv, NoLauncherMeansSingleProcess) {
  EXPECT_FALSE(detect_world_env(env_of({{"HOME", "/root"}})).has_value());
}

TEST(WorldEnv, TorchrunVariables) {
  auto world = detect_world_env(env_of({{"RANK", "3"},
                                        {"WORLD_SIZE", "4"},
                                        {"LOCAL_RANK", "1"},
                                        {"LOCAL_WORLD_SIZE", "2"},
                                        {"MASTER_ADDR", "10.0.0.5"},
                                        {"MASTER_PORT", "1234"}}));
  ASSERT_TRUE(world);
  EXPECT_EQ(world->source, "torchrun");
  EXPECT_EQ(world->rank, 3);
  EXPECT_EQ(world->world_size, 4);
  EXPECT_EQ(world->local_rank, 1);
  EXPECT_EQ(world->local_world_size, 2);
  EXPECT_EQ(world->node_rank, 1);
  EXPECT_EQ(world->master_addr, "10.0.0.5");
  EXPECT_EQ(world->master_port, 1234);
}

TEST(WorldEnv, RunnerLauncherIsTorchrunCompatibleAndMarked) {
  auto env = env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"RUNNER_LAUNCHED", "1"}});
  auto world = detect_world_env(env);
  ASSERT_TRUE(world);
  EXPECT_EQ(world->source, "runner");
  EXPECT_TRUE(launched_by_runner(env));
  EXPECT_EQ(world->master_port, kDefaultMasterPort);
}

TEST(WorldEnv, TorchrunWinsOverSlurmWhenBothAreSet) {
  // torchrun started inside an sbatch job: torchrun's own ranks are the truth.
  auto world = detect_world_env(
      env_of({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}));
  ASSERT_TRUE(world);
  EXPECT_EQ(world->source, "torchrun");
  EXPECT_EQ(world->rank, 1);
}

TEST(WorldEnv, SlurmVariablesFirstHostAndJobPort) {
  auto world = detect_world_env(env_of({{"SLURM_PROCID", "5"},
                                        {"SLURM_NTASKS", "8"},
                                        {"SLURM_STEP_ID", "0"},
                                        {"SLURM_LOCALID", "1"},
                                        {"SLURM_NODEID", "2"},
                                        {"SLURM_NNODES", "4"},
                                        {"SLURM_NODELIST", "gpu[07-10],login1"},
                                        {"SLURM_JOB_ID", "123456"}}));
  ASSERT_TRUE(world);
  EXPECT_EQ(world->source, "slurm");
  EXPECT_EQ(world->rank, 5);
  EXPECT_EQ(world->world_size, 8);
  EXPECT_EQ(world->local_rank, 1);
  EXPECT_EQ(world->local_world_size, 2);
  EXPECT_EQ(world->node_rank, 2);
  EXPECT_EQ(world->master_addr, "gpu07");
  EXPECT_EQ(world->master_port, 15000 + 123456 % 20000);
}

TEST(WorldEnv, ABatchScriptIsNoWorldRunnerLaunchesItself) {
  // What sbatch's script sees: the job's variables, but no step. runner exec'd there starts
  // its own ranks (launch.num_processes) instead of running as 1 of SLURM_NTASKS.
  EXPECT_FALSE(detect_world_env(env_of({{"SLURM_PROCID", "0"},
                                        {"SLURM_NTASKS", "1"},
                                        {"SLURM_LOCALID", "0"},
                                        {"SLURM_NODEID", "0"},
                                        {"SLURM_JOB_ID", "812"}})));
}

TEST(WorldEnv, SlurmMasterPortOverride) {
  auto world = detect_world_env(env_of({{"SLURM_PROCID", "0"},
                                        {"SLURM_NTASKS", "2"},
                                        {"SLURM_STEPID", "0"},
                                        {"SLURM_NODELIST", "n1"},
                                        {"SLURM_JOB_ID", "7"},
                                        {"MASTER_PORT", "40000"}}));
  ASSERT_TRUE(world);
  EXPECT_EQ(world->master_port, 40000);
  EXPECT_EQ(world->master_addr, "n1");
}

TEST(WorldEnv, OpenMpiVariables) {
  auto world = detect_world_env(env_of({{"OMPI_COMM_WORLD_RANK", "2"},
                                        {"OMPI_COMM_WORLD_SIZE", "4"},
                                        {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                        {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                        {"MASTER_ADDR", "head"}}));
  ASSERT_TRUE(world);
  EXPECT_EQ(world->source, "mpi");
  EXPECT_EQ(world->rank, 2);
  EXPECT_EQ(world->world_size, 4);
  EXPECT_EQ(world->local_world_size, 2);
  EXPECT_EQ(world->node_rank, 1);
  EXPECT_EQ(world->master_addr, "head");
  EXPECT_EQ(world->master_port, kDefaultMasterPort);
}

TEST(WorldEnv, RankOutsideWorldIsAnError) {
  try {
    detect_world_env(env_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}}));
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 2 is not below the world size 2"), std::string::npos)
        << e.what();
  }
}

TEST(WorldEnv, MalformedNumbersAndMissingPartnersAreErrors) {
  EXPECT_THROW(detect_world_env(env_of({{"RANK", "x"}, {"WORLD_SIZE", "2"}})), ConfigError);
  EXPECT_THROW(detect_world_env(env_of({{"RANK", "0"}})), ConfigError);
  EXPECT_THROW(
      detect_world_env(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}})),
      ConfigError);
}

TEST(SlurmNodelist, ExpandsRangesListsAndPadding) {
  EXPECT_EQ(expand_slurm_nodelist("node[01-04,07]"),
            (std::vector<std::string>{"node01", "node02", "node03", "node04", "node07"}));
  EXPECT_EQ(expand_slurm_nodelist("a1,b[8-10],c"),
            (std::vector<std::string>{"a1", "b8", "b9", "b10", "c"}));
  EXPECT_EQ(expand_slurm_nodelist("host"), (std::vector<std::string>{"host"}));
  EXPECT_EQ(expand_slurm_nodelist("r[1-2]-n[1-2]"),
            (std::vector<std::string>{"r1-n1", "r1-n2", "r2-n1", "r2-n2"}));
}

TEST(SlurmNodelist, MalformedListsAreErrors) {
  EXPECT_THROW(expand_slurm_nodelist("node[01-04"), ConfigError);
  EXPECT_THROW(expand_slurm_nodelist("node[a-b]"), ConfigError);
  EXPECT_THROW(expand_slurm_nodelist("node[4-1]"), ConfigError);
  EXPECT_THROW(expand_slurm_nodelist("node]"), ConfigError);
}

}  // namespace
}  // namespace runner::launch

namespace runner::launch {
namespace {

TEST(WorldEnv, TorchrunStaticRendezvousSharesTheAgentStore) {
  auto world = detect_world_env(env_of({{"RANK", "0"},
                                        {"WORLD_SIZE", "2"},
                                        {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                        {"TORCHELASTIC_RESTART_COUNT", "2"}}));
  ASSERT_TRUE(world);
  EXPECT_EQ(world->agent_store_prefix, "/worker/attempt_2");
  world = detect_world_env(
      env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"TORCHELASTIC_USE_AGENT_STORE", "False"}}));
  EXPECT_EQ(world->agent_store_prefix, "");
}

TEST(WorldEnv, RanksOfRunnersLauncherJoinTheStoreItHosts) {
  auto world = detect_world_env(env_of(
      {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {kLaunchedByRunnerVar, "1"}, {kLauncherStoreVar, "1"}}));
  ASSERT_TRUE(world);
  EXPECT_EQ(world->source, "runner");
  EXPECT_EQ(world->agent_store_prefix, "/runner/attempt_0");  // rank 0 joins as a client too
  // After a restart the ranks meet under their attempt's prefix, apart from the last attempt's.
  world = detect_world_env(env_of({{"RANK", "1"},
                                   {"WORLD_SIZE", "2"},
                                   {kLaunchedByRunnerVar, "1"},
                                   {kLauncherStoreVar, "1"},
                                   {kAttemptVar, "1"}}));
  EXPECT_EQ(world->agent_store_prefix, "/runner/attempt_1");
  // A stray variable without runner's launcher does not turn a torchrun rank 0 into a client.
  world = detect_world_env(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {kLauncherStoreVar, "1"}}));
  EXPECT_EQ(world->agent_store_prefix, "");
}

}  // namespace
}  // namespace runner::launch
