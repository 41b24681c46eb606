// The training step as one unit: the window's losses summed on the device, no host read in a
// step unless the loss scaler must decide whether to skip it (one read), autocast off again
// after a forward pass that threw (an out-of-memory trial of auto batch size).

#include <atomic>
#include <limits>
#include <stdexcept>
#include <string>

#include <ATen/autocast_mode.h>
#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "engine/grad_scaler.hpp"
#include "engine/train_step.hpp"

namespace runner::engine {
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

struct Rig {
  TinyModel model;
  torch::optim::SGD optimizer{model.parameters(), torch::optim::SGDOptions(0.1)};
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
    parts.optimizer = &optimizer;
    parts.loss = &loss;
    parts.scaler = &scaler;
    parts.clip_grad_norm = clip;
    step = std::make_unique<TrainStep>(parts);
  }
  void one_step(int micro_batches = 2) {
    for (int m = 0; m < micro_batches; ++m)
      step->micro_batch(x, y, micro_batches, m == micro_batches - 1);
    step->finish();
  }
};

// Counts the host reads of device values (Tensor::item and friends end in _local_scalar_dense).
struct HostReadCounter {
  static inline std::atomic<int> reads{0};
  at::CallbackHandle handle;
  HostReadCounter() {
    reads = 0;
    handle = at::addGlobalCallback(
        at::RecordFunctionCallback([](const at::RecordFunction& fn)
                                       -> std::unique_ptr<at::ObserverContext> {
          if (std::string(fn.name()) == "aten::_local_scalar_dense") ++reads;
          return nullptr;
        }).scopes({at::RecordScope::FUNCTION}));
  }
  ~HostReadCounter() { at::removeCallback(handle); }
};

TEST(TrainStep, SumsTheWindowOnTheDeviceAndCountsNonFiniteLosses) {
  torch::manual_seed(0);
  Rig rig(false);
  const auto a = rig.step->micro_batch(rig.x, rig.y, 3, false);
  auto bad = rig.x.clone();
  bad[0][0] = std::numeric_limits<float>::quiet_NaN();
  rig.step->micro_batch(bad, rig.y, 3, false);
  const auto c = rig.step->micro_batch(rig.x, rig.y, 3, true);
  rig.step->finish();
  const WindowSums sums = rig.step->take_window();
  EXPECT_EQ(sums.count, 3);
  EXPECT_EQ(sums.nonfinite.item<double>(), 1.0);
  EXPECT_NEAR(sums.loss.item<double>(), a.item<double>() + c.item<double>(), 1e-6);
  EXPECT_EQ(rig.step->take_window().count, 0);  // taken: the next window starts empty
}

TEST(TrainStep, NoHostReadInAStepWithoutLossScaling) {
  torch::manual_seed(0);
  Rig rig(false, /*clip=*/0.5);  // clipping included: torch's clip_grad_norm_ reads the norm
  rig.one_step();                // warm-up (one-time allocations)
  HostReadCounter counter;
  for (int i = 0; i < 10; ++i) rig.one_step();
  EXPECT_EQ(HostReadCounter::reads.load(), 0);
}

TEST(TrainStep, OneHostReadPerStepWithLossScaling) {
  torch::manual_seed(0);
  Rig rig(true, /*clip=*/0.5);
  rig.one_step();
  HostReadCounter counter;
  for (int i = 0; i < 10; ++i) rig.one_step();
  EXPECT_EQ(HostReadCounter::reads.load(), 10);  // the scaler's skip decision, nothing else
}

TEST(TrainStep, ClippingOnTheDeviceMatchesTorch) {
  torch::manual_seed(0);
  Rig a(false), b(false);
  b.model.fc->weight.data().copy_(a.model.fc->weight.data());
  b.model.fc->bias.data().copy_(a.model.fc->bias.data());
  b.x = a.x;
  b.y = a.y;
  for (Rig* rig : {&a, &b}) {
    rig->optimizer.zero_grad();
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
  parts.optimizer = &rig.optimizer;
  parts.loss = &rig.loss;
  parts.scaler = &rig.scaler;
  parts.precision = "bf16";
  TrainStep step(parts);
  rig.model.fail = true;
  EXPECT_THROW(step.micro_batch(rig.x, rig.y, 1, true), std::runtime_error);
  EXPECT_FALSE(at::autocast::is_autocast_enabled(c10::DeviceType::CPU));
}

}  // namespace
}  // namespace runner::engine
