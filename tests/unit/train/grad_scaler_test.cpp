// GradScaler: skip and back off on inf/NaN gradients, grow after a run of good steps, unscale
// before clipping, pass through when disabled.

#include <limits>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "plugin_params.hpp"
#include "runner/error.hpp"
#include "runner/optim/optimizer.hpp"
#include "runner/registries.hpp"
#include "train/grad_scaler.hpp"

namespace {

using runner::train::GradScaler;
using runner::train::GradScalerOptions;

struct Toy {
  torch::nn::Linear model{nullptr};
  std::unique_ptr<runner::optim::Optimizer> optimizer;  ///< the sgd or adam plugin, lr 0.1
  torch::Tensor x, y;

  explicit Toy(bool adam = false) {
    torch::manual_seed(0);
    model = torch::nn::Linear(4, 2);
    const auto& entry = runner::registries().optimizers.at(adam ? "adam" : "sgd");
    optimizer = entry.factory(runner::test::with_defaults(entry.schema, {{"lr", 0.1}}), *model);
    x = torch::randn({8, 4});
    y = torch::randn({8, 2});
  }
  torch::Tensor loss() { return torch::mse_loss(model->forward(x), y); }
  /// One engine iteration: backward of the scaled loss, optional bad gradient, unscale, the
  /// optimizer's update told the verdict on the device, scaler update. Returns whether the
  /// update ran (the test reads the verdict; the engine never does).
  bool iterate(GradScaler& scaler, double bad_value = 0) {
    optimizer->torch_optimizer().zero_grad();
    scaler.scale(loss()).backward();
    if (bad_value != 0) model->weight.grad()[0][0] = bad_value;
    const torch::Tensor found_inf = scaler.unscale_(optimizer->torch_optimizer());
    optimizer->update(torch::full({}, 0.1, torch::kDouble), found_inf);
    scaler.update();
    return !found_inf.defined() || found_inf.item<float>() == 0;
  }
  torch::Tensor weights() const { return model->weight.detach().clone(); }
};

TEST(GradScaler, StartsAtTorchsInitialScaleAndScalesTheLoss) {
  GradScaler scaler;
  EXPECT_EQ(scaler.scale(), 65536.0);
  const torch::Tensor loss = torch::tensor(1.5);
  EXPECT_DOUBLE_EQ(scaler.scale(loss).item<double>(), 1.5 * 65536);
}

TEST(GradScaler, AnFp16LossIsScaledInFloat32WithoutOverflow) {
  GradScaler scaler;
  const torch::Tensor scaled = scaler.scale(torch::tensor(2.0).to(torch::kHalf));
  EXPECT_EQ(scaled.scalar_type(), torch::kFloat);
  EXPECT_DOUBLE_EQ(scaled.item<double>(), 131072.0);  // > fp16's max 65504
}

TEST(GradScaler, InfGradientSkipsTheStepAndHalvesTheScale) {
  Toy toy;
  GradScaler scaler;
  const torch::Tensor before = toy.weights();
  EXPECT_FALSE(toy.iterate(scaler, std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(torch::equal(toy.weights(), before)) << "a skipped step must not touch weights";
  EXPECT_EQ(scaler.scale(), 32768.0);
  EXPECT_EQ(scaler.state().growth_tracker, 0);
}

TEST(GradScaler, NanGradientSkipsTheStepToo) {
  Toy toy;
  GradScaler scaler;
  const torch::Tensor before = toy.weights();
  EXPECT_FALSE(toy.iterate(scaler, std::numeric_limits<double>::quiet_NaN()));
  EXPECT_TRUE(torch::equal(toy.weights(), before));
  EXPECT_EQ(scaler.scale(), 32768.0);
  // The next good step runs at the lower scale.
  EXPECT_TRUE(toy.iterate(scaler));
  EXPECT_FALSE(torch::equal(toy.weights(), before));
  EXPECT_EQ(scaler.scale(), 32768.0);
}

TEST(GradScaler, GrowsAfterGrowthIntervalGoodStepsInARow) {
  GradScalerOptions options;
  options.init_scale = 8;
  options.growth_interval = 3;
  GradScaler scaler(options);
  Toy toy;
  EXPECT_TRUE(toy.iterate(scaler));
  EXPECT_TRUE(toy.iterate(scaler));
  EXPECT_EQ(scaler.scale(), 8.0);
  EXPECT_TRUE(toy.iterate(scaler));
  EXPECT_EQ(scaler.scale(), 16.0);
  // A bad step resets the count: two good steps after it are not enough to grow.
  toy.iterate(scaler);
  toy.iterate(scaler, std::numeric_limits<double>::infinity());
  EXPECT_EQ(scaler.scale(), 8.0);
  toy.iterate(scaler);
  toy.iterate(scaler);
  EXPECT_EQ(scaler.scale(), 8.0);
  toy.iterate(scaler);
  EXPECT_EQ(scaler.scale(), 16.0);
}

TEST(GradScaler, DefaultGrowthIsTimesTwoAfter2000GoodSteps) {
  auto p = torch::zeros({1}, torch::requires_grad());
  torch::optim::SGD optimizer({p}, torch::optim::SGDOptions(1e-3));
  GradScaler scaler;
  for (int i = 0; i < 2000; ++i) {
    EXPECT_EQ(scaler.scale(), 65536.0) << "grew early, at step " << i;
    optimizer.zero_grad();
    scaler.scale((p * 1e-3).sum()).backward();
    ASSERT_EQ(scaler.unscale_(optimizer).item<float>(), 0.0f);
    optimizer.step();
    scaler.update();
  }
  EXPECT_EQ(scaler.scale(), 131072.0);
}

TEST(GradScaler, UnscaleBeforeClippingSeesTheTrueGradients) {
  Toy reference, scaled;
  reference.loss().backward();
  const double true_norm = torch::nn::utils::clip_grad_norm_(reference.model->parameters(), 0.01);

  GradScaler scaler;
  scaler.scale(scaled.loss()).backward();
  scaler.unscale_(scaled.optimizer->torch_optimizer());
  // A second call in the same step only returns the verdict again.
  EXPECT_EQ(scaler.unscale_(scaled.optimizer->torch_optimizer()).item<float>(), 0.0f);
  const double norm = torch::nn::utils::clip_grad_norm_(scaled.model->parameters(), 0.01);
  EXPECT_NEAR(norm, true_norm, 1e-5 * true_norm);
  EXPECT_TRUE(
      torch::allclose(scaled.model->weight.grad(), reference.model->weight.grad(), 1e-5, 1e-8));
  scaled.optimizer->update(torch::full({}, 0.1, torch::kDouble), torch::zeros({1}));
  scaler.update();
  reference.optimizer->torch_optimizer().step();
  EXPECT_TRUE(torch::allclose(scaled.weights(), reference.weights(), 1e-5, 1e-7));
}

TEST(GradScaler, ASkippedStepIsNotAnOptimizerStep) {
  // Adam counts its own steps: only the steps the scaler let through may advance it.
  Toy toy(/*adam=*/true);
  GradScaler scaler;
  int64_t optimizer_steps = 0;
  for (int i = 0; i < 10; ++i) {
    const bool bad = i == 0 || i == 4 || i == 5;
    optimizer_steps += toy.iterate(scaler, bad ? std::numeric_limits<double>::infinity() : 0);
  }
  EXPECT_EQ(optimizer_steps, 7);
  toy.optimizer->state_to_host();  // the counts live on the device while training
  ASSERT_FALSE(toy.optimizer->torch_optimizer().state().empty());
  for (const auto& entry : toy.optimizer->torch_optimizer().state())  // keyed by address: all
    EXPECT_EQ(static_cast<const torch::optim::AdamParamState&>(*entry.second).step(), 7);
  EXPECT_EQ(scaler.scale(), 65536.0 / 8);
}

TEST(GradScaler, AnotherRanksInfSkipsTheStepHereToo) {
  // The engine's all-reduce (MAX) reports an inf found on another rank.
  int calls = 0;
  GradScaler scaler({}, [&](torch::Tensor& found) {
    ++calls;
    EXPECT_EQ(found.numel(), 1);
    found.fill_(1.0);
  });
  Toy toy;
  const torch::Tensor before = toy.weights();
  EXPECT_FALSE(toy.iterate(scaler));
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(torch::equal(toy.weights(), before));
  EXPECT_EQ(scaler.scale(), 32768.0);
}

TEST(GradScaler, DisabledIsAPassThrough) {
  GradScalerOptions options;
  options.enabled = false;
  GradScaler scaler(options);
  Toy toy;
  const torch::Tensor loss = toy.loss();
  EXPECT_TRUE(torch::equal(scaler.scale(loss), loss));
  EXPECT_EQ(scaler.scale(), 1.0);
  const torch::Tensor before = toy.weights();
  EXPECT_TRUE(toy.iterate(scaler));
  EXPECT_FALSE(torch::equal(toy.weights(), before));
}

TEST(GradScaler, StateRoundTripsAndRejectsDamage) {
  GradScalerOptions options;
  options.growth_interval = 5;
  GradScaler a(options);
  Toy toy;
  toy.iterate(a, std::numeric_limits<double>::infinity());
  toy.iterate(a);
  toy.iterate(a);
  GradScaler b(options);
  b.load_state(a.state());
  EXPECT_EQ(b.scale(), 32768.0);
  EXPECT_EQ(b.state().growth_tracker, 2);
  // Both grow on the same later step.
  for (int i = 0; i < 3; ++i) {
    toy.iterate(a);
    toy.iterate(b);
  }
  EXPECT_EQ(a.scale(), 65536.0);
  EXPECT_EQ(b.scale(), 65536.0);
  EXPECT_THROW(b.load_state({-1.0, 0}), runner::DataError);
  EXPECT_THROW(b.load_state({std::numeric_limits<double>::infinity(), 0}), runner::DataError);
}

TEST(GradScaler, UpdateWithoutAStepIsAProgrammingError) {
  GradScaler scaler;
  EXPECT_THROW(scaler.update(), std::logic_error);
}

}  // namespace
