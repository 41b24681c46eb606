// What a sweep makes of its file for each point, as a user reads it: `repeat` seeds start from
// the point's own seed (set by the sweep's set or --set, not only the base file's), and the
// settings a point's trackers are tagged with are values, not JSON text.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sweep/sweep_book.hpp"
#include "sweep/sweep_file.hpp"
#include "temp_files.hpp"

namespace runner::sweep {
namespace {

using runner::testing::TempDir;

std::string base_yaml() {
  return "name: base\n"
         "seed: 42\n"
         "data: {dataset: {name: synthetic}}\n"
         "model: {backbone: small_cnn, in_chans: 1, num_classes: 10}\n"
         "optimizer: {name: adam, lr: 0.001}\n"
         "train: {best: {metric: loss}}\n";
}

// Each point's seed override, the last one written (it wins).
std::vector<std::string> seeds_of(const Sweep& sweep) {
  std::vector<std::string> seeds;
  for (const auto& point : sweep.points) {
    std::string last;
    for (const auto& o : point.overrides)
      if (o.rfind("seed=", 0) == 0) last = o;
    seeds.push_back(last);
  }
  return seeds;
}

TEST(SweepPoints, RepeatSeedsStartFromThePointsOwnSeed) {
  TempDir dir;
  dir.write("base.yaml", base_yaml());
  const std::string file = dir.write(
      "s.yaml", "base: base.yaml\nrepeat: 2\nset: {seed: 7}\ngrid: {optimizer.lr: [0.01]}\n");
  const Sweep from_set = load_sweep(file);
  ASSERT_EQ(from_set.points.size(), 2u);
  EXPECT_EQ(seeds_of(from_set), (std::vector<std::string>{"seed=7", "seed=8"}));
  EXPECT_EQ(from_set.points[1].experiment.options.seed, 8u);
  EXPECT_NE(from_set.points[1].id.find("-seed=8"), std::string::npos) << from_set.points[1].id;
  const Sweep from_command_line = load_sweep(file, {"seed=100"});
  EXPECT_EQ(seeds_of(from_command_line).back(), "seed=101");
  const std::string plain =
      dir.write("p.yaml", "base: base.yaml\nrepeat: 2\ngrid: {optimizer.lr: [0.01]}\n");
  EXPECT_EQ(seeds_of(load_sweep(plain)), (std::vector<std::string>{"seed=42", "seed=43"}));
}

TEST(SweepPoints, TrackerSettingsAreValues) {
  TempDir dir;
  dir.write("base.yaml", base_yaml());
  const Sweep sweep = load_sweep(
      dir.write("s.yaml", "base: base.yaml\noutput: " + (dir.path() / "out").string() +
                              "\ngrid: {optimizer.name: [sgd], train.batch_size: [32]}\n"));
  const SweepBook book(sweep);
  const auto variables = book.point_variables(0);
  const auto settings = nlohmann::json::parse(variables.at("RUNNER_SWEEP_SETTINGS"));
  EXPECT_EQ(settings.at("optimizer.name"), "sgd");
  EXPECT_EQ(settings.at("train.batch_size"), 32);
  EXPECT_EQ(variables.at("RUNNER_SWEEP_POINT"), sweep.points[0].id);
}

}  // namespace
}  // namespace runner::sweep
