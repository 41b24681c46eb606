// train.best and train.early_stopping: which epoch is the best, by how much a value must beat
// it, when patience runs out, and what a checkpoint keeps of it.

#include <gtest/gtest.h>

#include "runner/metrics/metric.hpp"
#include "runner/registries.hpp"
#include "train/best_tracker.hpp"

namespace runner::train {
namespace {

config::EarlyStoppingOptions stopping(int64_t patience, double min_delta = 0) {
  config::EarlyStoppingOptions o;
  o.patience = patience;
  o.min_delta = min_delta;
  return o;
}

TEST(BestTracker, MaxKeepsTheLargestAndMinTheSmallest) {
  BestTracker max("accuracy", "max", stopping(0));
  EXPECT_TRUE(max.record(1, 0.5));
  EXPECT_FALSE(max.record(2, 0.4));
  EXPECT_TRUE(max.record(3, 0.7));
  EXPECT_EQ(max.epoch(), 3);
  EXPECT_DOUBLE_EQ(*max.value(), 0.7);
  BestTracker min("loss", "min", stopping(0));
  EXPECT_TRUE(min.record(1, 2.0));
  EXPECT_TRUE(min.record(2, 1.0));
  EXPECT_FALSE(min.record(3, 1.5));
  EXPECT_EQ(min.epoch(), 2);
}

TEST(BestTracker, MinDeltaIsTheMarginToBeat) {
  BestTracker best("accuracy", "max", stopping(0, 0.05));
  EXPECT_TRUE(best.record(1, 0.5));
  EXPECT_FALSE(best.improves(0.54)) << "within min_delta";
  EXPECT_TRUE(best.improves(0.56));
}

TEST(BestTracker, PatienceCountsEpochsWithoutImprovement) {
  BestTracker best("accuracy", "max", stopping(2));
  best.record(1, 0.5);
  best.record(2, 0.4);
  EXPECT_FALSE(best.patience_exhausted());
  best.record(3, 0.45);
  EXPECT_TRUE(best.patience_exhausted());
  BestTracker never("accuracy", "max", stopping(0));
  for (int epoch = 1; epoch < 10; ++epoch) never.record(epoch, 0.1);
  EXPECT_FALSE(never.patience_exhausted()) << "patience 0 is off";
}

TEST(BestTracker, ACheckpointRestoresIt) {
  BestTracker best("accuracy", "max", stopping(3));
  best.record(1, 0.5);
  best.record(2, 0.4);
  BestTracker restored("accuracy", "max", stopping(3));
  restored.load_json(best.to_json());
  EXPECT_DOUBLE_EQ(*restored.value(), 0.5);
  EXPECT_EQ(restored.epoch(), 1);
  restored.record(3, 0.3);
  restored.record(4, 0.3);
  EXPECT_TRUE(restored.patience_exhausted()) << "the epoch without improvement before counts";
  BestTracker none("accuracy", "max", stopping(0));
  restored.load_json(none.to_json());
  EXPECT_FALSE(restored.value().has_value());
}

TEST(BestTracker, AutoModeIsTheMetricsOwn) {
  const auto& entry = registries().metrics.at("accuracy");
  const std::vector<std::shared_ptr<metrics::Metric>> metrics = {entry.factory({})};
  EXPECT_EQ(resolve_best_mode({"accuracy", "auto"}, metrics), "max");
  EXPECT_EQ(resolve_best_mode({"loss", "auto"}, metrics), "min");
  EXPECT_EQ(resolve_best_mode({"accuracy", "min"}, metrics), "min") << "an explicit mode wins";
}

}  // namespace
}  // namespace runner::train
