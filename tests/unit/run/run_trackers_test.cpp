// The run's trackers from its config: output.tensorboard keeps TensorBoard on by default (first,
// once), the resolved config reaches them as flat params, a sweep's point as tags.

#include <cstdlib>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run/run_trackers.hpp"
#include "temp_files.hpp"

namespace runner::run {
namespace {

using nlohmann::json;

std::vector<std::string> names(const json& output) {
  testing::TempDir dir;
  std::vector<std::string> out;
  for (const auto& entry : make_trackers({{"name", "e"}, {"output", output}}, dir.path().string()))
    out.push_back(entry.name + "@" + entry.key_path);
  return out;
}

TEST(RunTrackers, TensorBoardIsOnByDefaultFirstAndOnce) {
  EXPECT_EQ(names({{"tensorboard", true}, {"trackers", json::array()}}),
            std::vector<std::string>{"tensorboard@output.tensorboard"});
  EXPECT_TRUE(names({{"tensorboard", false}, {"trackers", json::array()}}).empty());
  const json listed = {{"tensorboard", true}, {"trackers", {{{"name", "tensorboard"}}}}};
  EXPECT_EQ(names(listed), std::vector<std::string>{"tensorboard@output.trackers.0"})
      << "listed: where the list puts it, not twice";
  const json off_but_listed = {{"tensorboard", false}, {"trackers", {{{"name", "tensorboard"}}}}};
  EXPECT_EQ(names(off_but_listed).size(), 1u) << "the list says what it wants";
}

TEST(RunTrackers, TheResolvedConfigIsFlatDottedParams) {
  const json doc = {{"name", "e"},
                    {"train", {{"epochs", 3}, {"best", {{"metric", "accuracy"}}}}},
                    {"data", {{"train_transforms", {{{"name", "flip"}, {"p", 0.5}}}}}},
                    {"launch", {{"gpu_ids", {0, 1}}, {"device", nullptr}}}};
  const auto p = flat_params(doc);
  EXPECT_EQ(p.at("name"), "e") << "strings bare";
  EXPECT_EQ(p.at("train.epochs"), "3");
  EXPECT_EQ(p.at("train.best.metric"), "accuracy");
  EXPECT_EQ(p.at("data.train_transforms.0.name"), "flip") << "lists of objects by index";
  EXPECT_EQ(p.at("data.train_transforms.0.p"), "0.5");
  EXPECT_EQ(p.at("launch.gpu_ids"), "[0,1]") << "other lists as JSON";
  EXPECT_EQ(p.at("launch.device"), "null");
}

TEST(RunTrackers, ASweepPointIsTaggedWithTheSweepAndItsSettings) {
  setenv("RUNNER_SWEEP", "bs", 1);
  setenv("RUNNER_SWEEP_POINT", "001-train.batch_size=64", 1);
  setenv("RUNNER_SWEEP_SETTINGS", R"({"train.batch_size":"64"})", 1);
  const auto start =
      tracker_run_start({{"name", "e"}}, "/tmp/runs/bs/001", {{"runner.world_size", "2"}});
  unsetenv("RUNNER_SWEEP");
  unsetenv("RUNNER_SWEEP_POINT");
  unsetenv("RUNNER_SWEEP_SETTINGS");
  EXPECT_EQ(start.tags.at("runner.sweep"), "bs");
  EXPECT_EQ(start.tags.at("runner.sweep_point"), "001-train.batch_size=64");
  EXPECT_EQ(start.tags.at("sweep.train.batch_size"), "64");
  EXPECT_EQ(start.tags.at("runner.world_size"), "2");
  EXPECT_EQ(start.run_name, "001");
  EXPECT_EQ(start.experiment, "e");
  EXPECT_EQ(tracker_run_start({{"name", "e"}}, "/tmp/r", {}).tags.count("runner.sweep"), 0u);
}

}  // namespace
}  // namespace runner::run
