// The step rig: the schedule the loop tabulates reaches the optimizer, a window read says what
// the steps left on the device, fp16 brings the loss scaler, and gradient sync brings
// DataParallel (in a world of one, nothing to average).

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "dist/world.hpp"
#include "run/build_run_parts.hpp"
#include "small_experiment.hpp"
#include "train/step_rig.hpp"

namespace runner::train {
namespace {

struct Rigged {
  runner::testing::TempDir dir;
  RunParts parts;
  RankContext rank{dist::World::single(), torch::kCPU, config::Precision::kFp32};
  explicit Rigged(const std::vector<std::string>& overrides = {}) {
    parts = run::build_run_parts(runner::testing::load_small_experiment(dir, overrides),
                                 run::PartsRequest{});
  }
  void steps(StepRig& rig, int n) {
    torch::manual_seed(0);
    for (int i = 0; i < n; ++i) {
      rig.step().micro_batch(torch::randn({8, 1, 12, 12}), torch::randint(4, {8}), 1, true);
      rig.step().finish();
    }
  }
};

TEST(StepRig, AWindowReadSaysWhatTheStepsLeft) {
  Rigged r;
  StepRigOptions options;
  options.lrs = {0.01, 0.02, 0.03, 0.04};
  StepRig rig(r.rank, r.parts.model, *r.parts.optimizer, *r.parts.loss, options);
  const torch::Tensor before = r.parts.model->parameters().front().clone();
  r.steps(rig, 3);
  const WindowReading read = rig.read_window();
  EXPECT_EQ(read.optimizer_steps, 3);
  EXPECT_DOUBLE_EQ(read.finite, 3) << "one loss per micro-batch";
  EXPECT_GT(read.loss_sum, 0);
  EXPECT_DOUBLE_EQ(read.lr, 0.04) << "the next step's lr, from the table";
  EXPECT_DOUBLE_EQ(read.scale, 1) << "no loss scaling in fp32";
  EXPECT_FALSE(torch::equal(before, r.parts.model->parameters().front())) << "it trained";
  const WindowReading next = rig.read_window();
  EXPECT_DOUBLE_EQ(next.finite, 0) << "a read starts the next window";
  EXPECT_EQ(next.optimizer_steps, 3);
  EXPECT_EQ(rig.data_parallel(), nullptr) << "no gradient sync asked for";
}

TEST(StepRig, TheScheduleTablesTheSchedulersLearningRates) {
  Rigged r({"scheduler.name=step", "scheduler.step_size=1", "scheduler.gamma=0.5"});
  const std::vector<double> lrs = schedule_lrs(r.parts, 2, 6, false);
  ASSERT_EQ(lrs.size(), 7u) << "every step of 3 epochs of 2, and the one after";
  EXPECT_DOUBLE_EQ(lrs[0], 0.01);
  EXPECT_DOUBLE_EQ(lrs[2], 0.01 * 0.5) << "step_size counts epochs";
}

TEST(StepRig, Fp16BringsTheLossScalerAndSyncBringsDataParallel) {
  Rigged r;
  r.rank.precision = config::Precision::kFp16;  // the scaler's part runs on any device
  StepRigOptions options;
  options.lrs = {0.01};
  options.gradient_sync = config::GradientSyncOptions{};
  StepRig rig(r.rank, r.parts.model, *r.parts.optimizer, *r.parts.loss, options);
  EXPECT_TRUE(rig.scaler().enabled());
  ASSERT_NE(rig.data_parallel(), nullptr);
  EXPECT_EQ(rig.data_parallel()->transport(), "none") << "one process: nothing to average";
  EXPECT_DOUBLE_EQ(rig.read_window().scale, 65536) << "torch's initial scale";
}

}  // namespace
}  // namespace runner::train
