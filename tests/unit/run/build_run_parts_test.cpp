// The run's parts from an experiment: what a command asks for is built, the rest is not, the
// model's initial weights come from the experiment's seed, and the factories make fresh parts.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "run/build_run_parts.hpp"
#include "small_experiment.hpp"

namespace runner::run {
namespace {

torch::Tensor first_weight(const models::Model& model) { return model.parameters().front(); }

TEST(BuildRunParts, TrainingGetsEveryPartWithTheLimitsApplied) {
  runner::testing::TempDir dir;
  const auto e = runner::testing::load_small_experiment(dir, {"data.limit.train=40"});
  const train::RunParts parts = build_run_parts(e, PartsRequest{});
  ASSERT_TRUE(parts.splits.train && parts.splits.val && parts.splits.test);
  EXPECT_EQ(parts.splits.train->size(), 40u) << "data.limit.train applies";
  EXPECT_EQ(parts.splits.val->size(), 20u);
  EXPECT_EQ(parts.train_pipeline.size(), 1u);
  ASSERT_TRUE(parts.model);
  ASSERT_TRUE(parts.optimizer);
  ASSERT_TRUE(parts.make_scheduler);
  ASSERT_TRUE(parts.loss);
  ASSERT_EQ(parts.metrics.size(), 2u);
  EXPECT_EQ(parts.metrics[0]->name(), "accuracy");
  EXPECT_EQ(parts.about.backbone, "small_cnn");
  EXPECT_EQ(parts.about.dataset, "synthetic");
  EXPECT_EQ(parts.about.optimizer, "adam");
  ASSERT_TRUE(parts.about.model_options);
  EXPECT_EQ(parts.about.model_options->num_classes, 4);
  EXPECT_TRUE(parts.about.pretrained.empty()) << "a fresh initialisation";
}

TEST(BuildRunParts, TheSeedGivesTheInitialWeights) {
  runner::testing::TempDir dir;
  const auto a = build_run_parts(runner::testing::load_small_experiment(dir), PartsRequest{});
  torch::manual_seed(12345);  // whatever the stream was before, the seed decides
  const auto b = build_run_parts(runner::testing::load_small_experiment(dir), PartsRequest{});
  const auto c =
      build_run_parts(runner::testing::load_small_experiment(dir, {"seed=8"}), PartsRequest{});
  EXPECT_TRUE(torch::equal(first_weight(*a.model), first_weight(*b.model)));
  EXPECT_FALSE(torch::equal(first_weight(*a.model), first_weight(*c.model)));
}

TEST(BuildRunParts, PredictionAndChecksBuildOnlyWhatTheyNeed) {
  runner::testing::TempDir dir;
  const auto e = runner::testing::load_small_experiment(dir);
  PartsRequest predict;
  predict.training = false;
  const auto for_predict = build_run_parts(e, predict);
  EXPECT_TRUE(for_predict.model);
  EXPECT_FALSE(for_predict.optimizer) << "prediction has no optimizer";
  EXPECT_FALSE(for_predict.make_scheduler);

  PartsRequest data_only;
  data_only.model = false;
  data_only.training = false;
  const auto for_checks = build_run_parts(e, data_only);
  EXPECT_TRUE(for_checks.splits.train);
  EXPECT_FALSE(for_checks.model);

  PartsRequest model_only;
  model_only.data = false;
  model_only.training = false;
  const auto for_export = build_run_parts(e, model_only);
  EXPECT_FALSE(for_export.splits.train) << "export needs no data";
  EXPECT_TRUE(for_export.model);
}

TEST(BuildRunParts, TheFactoriesMakeFreshPartsAsTheRunDoes) {
  runner::testing::TempDir dir;
  const auto parts = build_run_parts(runner::testing::load_small_experiment(dir), PartsRequest{});
  const auto fresh = parts.make_model();
  ASSERT_TRUE(fresh);
  EXPECT_NE(fresh.get(), parts.model.get());
  EXPECT_EQ(fresh->parameters().size(), parts.model->parameters().size());
  const auto optimizer = parts.make_optimizer(*fresh);
  EXPECT_DOUBLE_EQ(optim::first_group_lr(optimizer->torch_optimizer()), 0.01)
      << "optimizer.lr reaches the optimizer";
  optim::ScheduleContext context;
  context.base_lr = 0.01;
  context.steps_per_epoch = 8;
  context.total_steps = 16;
  EXPECT_DOUBLE_EQ(parts.make_scheduler(context)->lr_at(3), 0.01) << "scheduler none";
}

}  // namespace
}  // namespace runner::run
