// The optimizer plugins: schema defaults, hand-computed first steps, weight-decay exemption.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "engine/plugin_params.hpp"
#include "runner/error.hpp"
#include "runner/optim/optimizer.hpp"
#include "runner/registries.hpp"

namespace {

struct Net : torch::nn::Module {
  Net() {
    fc = register_module("fc", torch::nn::Linear(2, 2));
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({2})));
    torch::NoGradGuard no_grad;
    fc->weight.fill_(1.0);
    fc->bias.fill_(1.0);
  }
  torch::nn::Linear fc{nullptr};
  torch::nn::LayerNorm norm{nullptr};
};

std::unique_ptr<torch::optim::Optimizer> make(const std::string& name, nlohmann::json user,
                                              torch::nn::Module& model) {
  const auto& entry = runner::registries().optimizers.at(name);
  return entry.factory(runner::test::with_defaults(entry.schema, std::move(user)), model);
}

/// One step with zero gradients: only weight decay moves the weights.
void step_with_zero_grads(Net& net, torch::optim::Optimizer& optimizer) {
  for (auto& p : net.parameters()) p.mutable_grad() = torch::zeros_like(p);
  optimizer.step();
}

TEST(Optimizers, EveryOptimizerHasADefaultLr) {
  for (const auto& name : {"sgd", "adam", "adamw"}) {
    const auto& schema = runner::registries().optimizers.at(name).schema;
    EXPECT_GT(schema.at("properties").at("lr").at("default").get<double>(), 0) << name;
  }
}

TEST(Optimizers, SgdMomentumFollowsTorchsUpdate) {
  auto p = torch::ones({1}, torch::requires_grad());
  struct One : torch::nn::Module {
    explicit One(torch::Tensor p) { register_parameter("p", p); }
  } model(p);
  auto optimizer = make("sgd", {{"lr", 0.5}, {"momentum", 0.9}}, model);
  // buf1 = g = 2 -> p = 1 - 0.5*2 = 0; buf2 = 0.9*2 + 2 = 3.8 -> p = 0 - 0.5*3.8 = -1.9
  for (int i = 0; i < 2; ++i) {
    p.mutable_grad() = torch::full({1}, 2.0);
    optimizer->step();
  }
  EXPECT_NEAR(p.item<double>(), -1.9, 1e-6);
}

TEST(Optimizers, NesterovWithoutMomentumIsAConfigError) {
  Net net;
  EXPECT_THROW(make("sgd", {{"nesterov", true}}, net), runner::ConfigError);
  EXPECT_NO_THROW(make("sgd", {{"nesterov", true}, {"momentum", 0.9}}, net));
}

TEST(Optimizers, AdamFirstStepMovesEachWeightByLr) {
  // m_hat = g, v_hat = g^2 on the first step: the update is lr * g / (|g| + eps) ~ lr * sign(g).
  Net net;
  auto optimizer = make("adam", {{"lr", 0.01}}, net);
  for (auto& p : net.parameters()) p.mutable_grad() = torch::full_like(p, -3.0);
  optimizer->step();
  EXPECT_NEAR(net.fc->weight[0][0].item<double>(), 1.01, 1e-6);
}

TEST(Optimizers, AdamwDecaysDecoupledByDefault) {
  // Zero gradient: Adam's update is 0, AdamW still shrinks w by lr * weight_decay * w.
  Net net;
  auto optimizer = make("adamw", {{"lr", 0.1}}, net);  // weight_decay defaults to 0.01
  step_with_zero_grads(net, *optimizer);
  EXPECT_NEAR(net.fc->weight[0][0].item<double>(), 1.0 - 0.1 * 0.01, 1e-7);
  EXPECT_NEAR(net.fc->bias[0].item<double>(), 1.0 - 0.1 * 0.01, 1e-7);
}

TEST(Optimizers, ExemptNormAndBiasLeavesOneDimensionalParametersUndecayed) {
  for (const auto& name : {"sgd", "adamw"}) {
    Net net;
    auto optimizer =
        make(name, {{"lr", 0.1}, {"weight_decay", 0.5}, {"exempt_norm_and_bias", true}}, net);
    step_with_zero_grads(net, *optimizer);
    EXPECT_NEAR(net.fc->weight[0][0].item<double>(), 1.0 - 0.1 * 0.5, 1e-6) << name;
    EXPECT_EQ(net.fc->bias[0].item<double>(), 1.0) << name;
    EXPECT_EQ(net.norm->weight[0].item<double>(), 1.0) << name;
  }
  Net net;
  auto optimizer = make("sgd", {{"lr", 0.1}, {"weight_decay", 0.5}}, net);
  step_with_zero_grads(net, *optimizer);
  EXPECT_NEAR(net.fc->bias[0].item<double>(), 1.0 - 0.1 * 0.5, 1e-6) << "not exempt by default";
}

TEST(Optimizers, SetLrReachesEveryParameterGroup) {
  Net net;
  auto optimizer = make("adamw", {{"exempt_norm_and_bias", true}}, net);
  ASSERT_EQ(optimizer->param_groups().size(), 2u);
  runner::optim::set_lr(*optimizer, 0.123);
  for (auto& group : optimizer->param_groups()) EXPECT_EQ(group.options().get_lr(), 0.123);
  EXPECT_EQ(runner::optim::current_lr(*optimizer), 0.123);
}

TEST(Optimizers, ATiedWeightIsUpdatedOnceAndFrozenOnesNotAtAll) {
  struct Tied : torch::nn::Module {
    Tied() {
      a = register_module("a", torch::nn::Linear(2, 2));
      b = register_module("b", torch::nn::Linear(2, 2));
      register_parameter("shared", a->weight);  // a.weight listed a second time
      frozen = register_parameter("frozen", torch::ones({2}), /*requires_grad=*/false);
    }
    torch::nn::Linear a{nullptr}, b{nullptr};
    torch::Tensor frozen;
  } model;
  auto optimizer = make("sgd", {{"lr", 1.0}}, model);
  size_t count = 0;
  for (auto& group : optimizer->param_groups()) count += group.params().size();
  EXPECT_EQ(count, 4u) << "a.weight, a.bias, b.weight, b.bias; not a.weight again, not frozen";
  const auto before = model.a->weight.detach().clone();
  model.a->weight.mutable_grad() = torch::ones_like(model.a->weight);
  optimizer->step();
  EXPECT_TRUE(torch::allclose(model.a->weight, before - 1.0)) << "stepped twice?";
}

}  // namespace
