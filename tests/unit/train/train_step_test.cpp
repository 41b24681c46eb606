// The training step as one unit: the window's losses and runs of NaN/inf losses summed on the
// device, no host read in a step (with or without fp16 loss scaling and clipping), a step with
// inf/NaN gradients skipped on the device and not counted by the schedule, autocast off again
// after a forward pass that threw (an out-of-memory trial of auto batch size).

#include <limits>
#include <stdexcept>
#include <string>

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "host_read_counter.hpp"
#include "plugin_params.hpp"
#include "runner/registries.hpp"
#include "train/device_schedule.hpp"
#include "train/grad_scaler.hpp"
#include "train/train_step.hpp"

namespace runner::train {
namespace {

struct TinyModel : models::Model {
  torch::nn::Linear fc{nullptr};
  bool fail = false;
  TinyModel() { fc = register_module("fc", torch::nn::Linear(4, 3)); }
  torch::Tensor forward_features(torch::Tensor x) override {
    if (fail) throw std::runtime_error("out of memory (pretend)");
    return x;
  }
  torch::Tensor forward_head(torch::Tensor x, bool) override { return fc->forward(x); }
  std::string first_conv() const override { return "fc"; }
  std::string classifier() const override { return "fc"; }
};

struct CrossEntropy : losses::Loss {
  torch::Tensor compute(const torch::Tensor& logits, const torch::Tensor& targets) override {
    return torch::nn::functional::cross_entropy(logits, targets);
  }
};

std::unique_ptr<optim::Optimizer> adam_for(torch::nn::Module& model) {
  const auto& entry = registries().optimizers.at("adam");
  return entry.factory(test::with_defaults(entry.schema, {{"lr", 0.1}}), model);
}

struct Rig {
  TinyModel model;
  std::unique_ptr<optim::Optimizer> optimizer = adam_for(model);  ///< the adam plugin
  DeviceSchedule schedule{{0.1, 0.05, 0.025}, torch::kCPU};
  CrossEntropy loss;
  GradScaler scaler;
  std::unique_ptr<TrainStep> step;
  torch::Tensor x = torch::randn({8, 4}), y = torch::randint(3, {8});

  explicit Rig(bool scaling, std::optional<double> clip = std::nullopt)
      : scaler([&] {
          GradScalerOptions o;
          o.enabled = scaling;
          return o;
        }()) {
    TrainStepParts parts;
    parts.model = &model;
    parts.optimizer = optimizer.get();
    parts.schedule = &schedule;
    parts.loss = &loss;
    parts.scaler = &scaler;
    parts.clip_grad_norm = clip;
    step = std::make_unique<TrainStep>(parts);
  }
  void one_step(int micro_batches = 2, const torch::Tensor& images = {}) {
    for (int m = 0; m < micro_batches; ++m)
      step->micro_batch(images.defined() ? images : x, y, micro_batches, m == micro_batches - 1);
    step->finish();
  }
  torch::Tensor weights() const { return model.fc->weight.detach().clone(); }
  torch::Tensor nan_images() const {
    auto bad = x.clone();
    bad[0][0] = std::numeric_limits<float>::quiet_NaN();
    return bad;
  }
};

TEST(TrainStep, SumsTheWindowOnTheDeviceAndCountsNonFiniteLosses) {
  torch::manual_seed(0);
  Rig rig(false);
  const auto a = rig.step->micro_batch(rig.x, rig.y, 3, false);
  rig.step->micro_batch(rig.nan_images(), rig.y, 3, false);
  const auto c = rig.step->micro_batch(rig.x, rig.y, 3, true);
  rig.step->finish();
  const WindowSums sums = rig.step->take_window();
  EXPECT_EQ(sums.micro_batches, 3);
  EXPECT_EQ(sums.nonfinite.item<double>(), 1.0);
  EXPECT_EQ(sums.finite.item<double>(), 2.0);
  EXPECT_NEAR(sums.loss.item<double>(), a.item<double>() + c.item<double>(), 1e-6);
  EXPECT_EQ(rig.step->take_window().micro_batches, 0);  // taken: the next window starts empty
}

TEST(TrainStep, RunsOfNonFiniteStepsAreCountedOnTheDevice) {
  torch::manual_seed(0);
  Rig rig(true);  // fp16 scaling: the NaN steps are skipped, the weights stay finite
  rig.one_step(1, rig.nan_images());
  rig.one_step(1, rig.nan_images());
  EXPECT_EQ(rig.step->nonfinite_run().item<double>(), 2.0);
  rig.one_step(1);
  rig.one_step(1, rig.nan_images());
  const WindowSums sums = rig.step->take_window();
  EXPECT_EQ(sums.longest_nonfinite_run.item<double>(), 2.0);
  EXPECT_EQ(rig.step->nonfinite_run().item<double>(), 1.0) << "a finite step ends a run";
  rig.one_step(1, rig.nan_images());
  EXPECT_EQ(rig.step->take_window().longest_nonfinite_run.item<double>(), 2.0)
      << "a run that began in an earlier window counts whole";
}

TEST(TrainStep, NoHostReadInAStepWithOrWithoutLossScaling) {
  for (bool scaling : {false, true}) {
    torch::manual_seed(0);
    Rig rig(scaling, /*clip=*/0.5);  // clipping too: torch's clip_grad_norm_ reads the norm
    rig.one_step();                  // warm-up (one-time allocations, the optimizer's state)
    test::HostReadCounter counter;
    for (int i = 0; i < 10; ++i) rig.one_step();
    rig.one_step(1, rig.nan_images());  // a skipped step reads nothing either
    EXPECT_EQ(test::HostReadCounter::reads(), 0) << "loss scaling " << scaling;
  }
}

TEST(TrainStep, AStepWithInfGradientsIsSkippedOnTheDeviceAndNotCounted) {
  torch::manual_seed(0);
  Rig rig(true);
  const auto before = rig.weights();
  rig.one_step(1, rig.nan_images());
  EXPECT_TRUE(torch::equal(rig.weights(), before)) << "the update was not skipped";
  EXPECT_EQ(rig.schedule.steps_taken().item<int64_t>(), 0);
  EXPECT_EQ(rig.schedule.lr().item<double>(), 0.1) << "the schedule stays at its first step";
  EXPECT_EQ(rig.scaler.scale(), 32768.0);
  rig.one_step(1);
  EXPECT_FALSE(torch::equal(rig.weights(), before));
  EXPECT_EQ(rig.schedule.steps_taken().item<int64_t>(), 1);
  EXPECT_EQ(rig.schedule.lr().item<double>(), 0.05);
  rig.optimizer->state_to_host();  // Adam's own count agrees: one step
  for (const auto& entry : rig.optimizer->torch_optimizer().state())
    EXPECT_EQ(static_cast<const torch::optim::AdamParamState&>(*entry.second).step(), 1);
}

TEST(TrainStep, TheScheduleKeepsItsLastLrPastItsEnd) {
  DeviceSchedule schedule({0.3, 0.2}, torch::kCPU);
  for (int i = 0; i < 4; ++i) schedule.count_step({});
  EXPECT_EQ(schedule.steps_taken().item<int64_t>(), 4);
  EXPECT_EQ(schedule.lr().item<double>(), 0.2);
  schedule.set_steps_taken(0);
  EXPECT_EQ(schedule.lr().item<double>(), 0.3);
}

TEST(TrainStep, ClippingOnTheDeviceMatchesTorch) {
  torch::manual_seed(0);
  Rig a(false), b(false);
  b.model.fc->weight.data().copy_(a.model.fc->weight.data());
  b.model.fc->bias.data().copy_(a.model.fc->bias.data());
  b.x = a.x;
  b.y = a.y;
  for (Rig* rig : {&a, &b}) {
    rig->optimizer->torch_optimizer().zero_grad();
    rig->loss.compute(rig->model.forward(rig->x), rig->y).backward();
  }
  torch::nn::utils::clip_grad_norm_(a.model.parameters(), 0.05);
  clip_grad_norm_on_device(b.model.parameters(), 0.05);
  EXPECT_TRUE(torch::allclose(a.model.fc->weight.grad(), b.model.fc->weight.grad(), 1e-6, 1e-7));
  EXPECT_TRUE(torch::allclose(a.model.fc->bias.grad(), b.model.fc->bias.grad(), 1e-6, 1e-7));
}

TEST(TrainStep, AutocastIsOffAfterAForwardThatThrew) {
  Rig rig(false);
  TrainStepParts parts;
  parts.model = &rig.model;
  parts.optimizer = rig.optimizer.get();
  parts.schedule = &rig.schedule;
  parts.loss = &rig.loss;
  parts.scaler = &rig.scaler;
  parts.precision = config::Precision::kBf16;
  TrainStep step(parts);
  rig.model.fail = true;
  EXPECT_THROW(step.micro_batch(rig.x, rig.y, 1, true), std::runtime_error);
  EXPECT_FALSE(at::autocast::is_autocast_enabled(c10::DeviceType::CPU));
}

}  // namespace
}  // namespace runner::train
