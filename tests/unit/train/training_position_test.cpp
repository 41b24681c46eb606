// The training position: window reads add to the window's and the epoch's loss totals, and a
// checkpoint restores the place a resumed run continues from.

#include <cmath>

#include <gtest/gtest.h>

#include "runner/error.hpp"
#include "train/training_position.hpp"

namespace runner::train {
namespace {

TEST(TrainingPosition, AReadJoinsTheWindowAndTheEpoch) {
  TrainingPosition p;
  p.steps_attempted = 3;
  WindowReading r;
  r.loss_sum = 6;
  r.finite = 3;
  r.optimizer_steps = 3;
  r.lr = 0.1;
  r.scale = 1024;
  p.take(r, 20);
  p.window = {};
  r.loss_sum = 2;
  r.finite = 2;
  r.nonfinite = 1;
  r.optimizer_steps = 5;
  p.steps_attempted = 6;
  p.take(r, 20);
  EXPECT_DOUBLE_EQ(p.window.mean(), 1.0);
  EXPECT_DOUBLE_EQ(p.epoch_totals.mean(), 8.0 / 5.0) << "the finite losses only";
  EXPECT_DOUBLE_EQ(p.epoch_totals.nonfinite, 1);
  EXPECT_EQ(p.optimizer_steps, 5);
  EXPECT_DOUBLE_EQ(p.scale, 1024);
  EXPECT_FALSE(p.unread());
  ++p.steps_attempted;
  EXPECT_TRUE(p.unread());
  EXPECT_TRUE(std::isnan(LossTotals{}.mean())) << "no finite loss: no mean";
}

TEST(TrainingPosition, ARunOfNonFiniteStepsIsADivergedRun) {
  TrainingPosition p;
  WindowReading r;
  r.longest_nonfinite_run = 4;
  EXPECT_NO_THROW(p.take(r, 5));
  r.longest_nonfinite_run = 5;
  try {
    p.take(r, 5);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("NaN or inf for 5 consecutive steps"), std::string::npos) << what;
    EXPECT_NE(what.find("train.max_nonfinite_steps"), std::string::npos) << what;
  }
}

TEST(TrainingPosition, ACheckpointRestoresThePlace) {
  TrainingPosition p;
  p.epoch = 2;
  p.batches_done = 17;
  p.optimizer_steps = 40;
  p.steps_attempted = p.attempted_at_read = 42;
  p.nonfinite_run = 1;
  p.window = {3, 2, 0};
  p.epoch_totals = {10, 8, 1};
  const TrainingPosition q = TrainingPosition::from_json(p.to_json());
  EXPECT_EQ(q.epoch, 2);
  EXPECT_EQ(q.batches_done, 17);
  EXPECT_EQ(q.optimizer_steps, 40);
  EXPECT_EQ(q.steps_attempted, 42);
  EXPECT_EQ(q.last_logged_step, 40) << "records after the checkpoint are written again";
  EXPECT_EQ(q.nonfinite_run, 1);
  EXPECT_DOUBLE_EQ(q.window.sum, 3);
  EXPECT_DOUBLE_EQ(q.epoch_totals.nonfinite, 1);
}

TEST(TrainingPosition, CheckpointsOfEarlierRunnersStillLoad) {
  // Before the device-side step a checkpoint had no steps_attempted nor loss totals.
  const nlohmann::json old = {
      {"epoch", 1}, {"batches_done", 0}, {"optimizer_steps", 12}, {"nonfinite_streak", 0}};
  const TrainingPosition p = TrainingPosition::from_json(old);
  EXPECT_EQ(p.steps_attempted, 12);
  EXPECT_DOUBLE_EQ(p.epoch_totals.finite, 0);
}

TEST(CheckpointState, OnlyTheWorldThatWroteItResumesIt) {
  CheckpointState state;
  state.position.epoch = 1;
  state.world_size = 2;
  state.run_seconds = 12.5;
  state.scaler = {1024.0, 7};
  const nlohmann::json meta = state.to_json();
  const CheckpointState back = CheckpointState::from_json(meta, "last.pt", 2);
  EXPECT_EQ(back.position.epoch, 1);
  EXPECT_DOUBLE_EQ(back.scaler.scale, 1024.0);
  EXPECT_EQ(back.scaler.growth_tracker, 7);
  EXPECT_DOUBLE_EQ(back.run_seconds, 12.5);
  try {
    CheckpointState::from_json(meta, "last.pt", 1);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("use launch.num_processes=2"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace runner::train
