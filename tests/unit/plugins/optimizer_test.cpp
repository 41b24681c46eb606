// The optimizer plugins: schema defaults, hand-computed first steps, weight_decay_exclude,
// the fused kernels against torch::optim with the lr and the loss scaler's verdict as device
// tensors (the engine's update()), and checkpoints written before that interface.

#include <filesystem>
#include <sstream>

#include <ATen/Version.h>
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "optimizers/adam_with_copy.hpp"
#include "optimizers/adam_with_copy_loop.hpp"

#include "plugin_params.hpp"
#include "runner/error.hpp"
#include "runner/models/compute_copies.hpp"
#include "runner/optim/optimizer.hpp"
#include "runner/registries.hpp"
#include "temp_files.hpp"
#include "train/checkpoint.hpp"

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

std::unique_ptr<runner::optim::Optimizer> make(const std::string& name, nlohmann::json user,
                                               torch::nn::Module& model) {
  const auto& entry = runner::registries().optimizers.at(name);
  return entry.factory(runner::test::with_defaults(entry.schema, std::move(user)), model);
}

/// One step as the engine takes it: the lr as a 0-dim tensor (the configured one unless given),
/// and `found_inf` as the loss scaler's float32 [1] verdict when given.
void engine_step(runner::optim::Optimizer& optimizer, torch::Tensor found_inf = {},
                 double lr = -1) {
  if (lr < 0) lr = runner::optim::first_group_lr(optimizer.torch_optimizer());
  optimizer.update(torch::full({}, lr, torch::kDouble), found_inf);
}

/// One step with zero gradients: only weight decay moves the weights.
void step_with_zero_grads(Net& net, runner::optim::Optimizer& optimizer) {
  for (auto& p : net.parameters()) p.mutable_grad() = torch::zeros_like(p);
  engine_step(optimizer);
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
    engine_step(*optimizer);
  }
  EXPECT_NEAR(p.item<double>(), -1.9, 1e-6);
}

TEST(Optimizers, SgdDampeningFollowsTorchSgd) {
  // lr 0.5, momentum 0.9, constant gradient 2. torch does not dampen the first step (buf = g):
  // dampening 0.5: buf2 = 0.9 * 2 + 0.5 * 2 = 2.8 -> p = 0 - 1.4; dampening 0: buf2 = 3.8 -> -1.9.
  auto trajectory = [](double dampening) {
    auto p = torch::ones({1}, torch::requires_grad());
    auto q = torch::ones({1}, torch::requires_grad());
    struct One : torch::nn::Module {
      explicit One(torch::Tensor p) { register_parameter("p", p); }
    } model(p);
    auto optimizer = make("sgd", {{"lr", 0.5}, {"momentum", 0.9}, {"dampening", dampening}}, model);
    torch::optim::SGD reference(std::vector<torch::Tensor>{q},
                                torch::optim::SGDOptions(0.5).momentum(0.9).dampening(dampening));
    std::vector<double> out;
    for (int step = 0; step < 3; ++step) {
      p.mutable_grad() = torch::full({1}, 2.0);
      q.mutable_grad() = torch::full({1}, 2.0);
      engine_step(*optimizer);
      reference.step();
      EXPECT_TRUE(torch::equal(p, q)) << "dampening " << dampening << " step " << step;
      out.push_back(p.item<double>());
    }
    return out;
  };
  const auto damped = trajectory(0.5);
  const auto plain = trajectory(0.0);
  EXPECT_NEAR(damped[0], 0.0, 1e-6);
  EXPECT_NEAR(plain[0], 0.0, 1e-6);
  EXPECT_NEAR(damped[1], -1.4, 1e-6);
  EXPECT_NEAR(plain[1], -1.9, 1e-6);
  EXPECT_NEAR(damped[2], -1.4 - 0.5 * (0.9 * 2.8 + 1.0), 1e-5);
  EXPECT_NEAR(plain[2], -1.9 - 0.5 * (0.9 * 3.8 + 2.0), 1e-5);
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
  engine_step(*optimizer);
  EXPECT_NEAR(net.fc->weight[0][0].item<double>(), 1.01, 1e-6);
}

TEST(Optimizers, AdamwDecaysDecoupledByDefault) {
  // Zero gradient: Adam's update is 0, AdamW still shrinks w by lr * weight_decay * w.
  Net net;
  auto optimizer = make("adamw", {{"lr", 0.1}}, net);  // weight_decay defaults to 0.01
  step_with_zero_grads(net, *optimizer);
  EXPECT_NEAR(net.fc->weight[0][0].item<double>(), 1.0 - 0.1 * 0.01, 1e-7);
  EXPECT_EQ(net.fc->bias[0].item<double>(), 1.0);  // weight_decay_exclude [bias, norm]
}

TEST(Optimizers, WeightDecayExcludeLeavesBiasesAndNormsUndecayedByDefaultForAdamwAndSgd) {
  for (const auto& name : {"sgd", "adamw"}) {  // timm's param_groups_weight_decay by default
    Net net;
    auto optimizer = make(name, {{"lr", 0.1}, {"weight_decay", 0.5}}, net);
    step_with_zero_grads(net, *optimizer);
    EXPECT_NEAR(net.fc->weight[0][0].item<double>(), 1.0 - 0.1 * 0.5, 1e-6) << name;
    EXPECT_EQ(net.fc->bias[0].item<double>(), 1.0) << name;
    EXPECT_EQ(net.norm->weight[0].item<double>(), 1.0) << name;
  }
  for (const auto& name : {"sgd", "adamw"}) {  // [] decays everything, as torch.optim
    Net net;
    auto optimizer = make(
        name,
        {{"lr", 0.1}, {"weight_decay", 0.5}, {"weight_decay_exclude", nlohmann::json::array()}},
        net);
    step_with_zero_grads(net, *optimizer);
    EXPECT_NEAR(net.fc->bias[0].item<double>(), 1.0 - 0.1 * 0.5, 1e-6) << name;
  }
  Net only_named;  // a name: that parameter alone
  auto optimizer =
      make("sgd", {{"lr", 0.1}, {"weight_decay", 0.5}, {"weight_decay_exclude", {"fc.weight"}}},
           only_named);
  step_with_zero_grads(only_named, *optimizer);
  EXPECT_EQ(only_named.fc->weight[0][0].item<double>(), 1.0);
  EXPECT_NEAR(only_named.fc->bias[0].item<double>(), 1.0 - 0.1 * 0.5, 1e-6);
  Net earlier;  // an earlier runner's exempt_norm_and_bias false wins: everything decays
  auto earlier_optimizer =
      make("adamw", {{"lr", 0.1}, {"weight_decay", 0.5}, {"exempt_norm_and_bias", false}}, earlier);
  step_with_zero_grads(earlier, *earlier_optimizer);
  EXPECT_NEAR(earlier.fc->bias[0].item<double>(), 1.0 - 0.1 * 0.5, 1e-6);
  Net adam;  // torch.optim.Adam's default: every parameter decays
  auto adam_optimizer = make("adam", {{"lr", 0.1}, {"weight_decay", 0.5}}, adam);
  step_with_zero_grads(adam, *adam_optimizer);
  EXPECT_LT(adam.fc->bias[0].item<double>(), 1.0);
}

TEST(Optimizers, WeightDecayExcludePatternsMatchNamesWithStars) {
  EXPECT_TRUE(runner::optim::excluded_from_decay("blocks.0.pos_embed", 3, {"*pos_embed"}));
  EXPECT_TRUE(runner::optim::excluded_from_decay("cls_token", 3, {"cls_token"}));
  EXPECT_FALSE(runner::optim::excluded_from_decay("cls_token_x", 3, {"cls_token"}));
  EXPECT_TRUE(runner::optim::excluded_from_decay("stages.1.blocks.2.conv.bias", 1, {"bias"}));
  EXPECT_TRUE(runner::optim::excluded_from_decay("head.norm.weight", 1, {"norm"}));
  EXPECT_FALSE(runner::optim::excluded_from_decay("head.fc.weight", 2, {"bias", "norm"}));
  EXPECT_TRUE(runner::optim::excluded_from_decay("a.b.c", 2, {"a.*.c"}));
}

TEST(Optimizers, TheScheduledLrTensorDrivesEveryGroup) {
  // Zero gradients, so only AdamW's decay moves the weights, by the lr of the tensor (not the
  // configured 0.1): w = 1 - 0.5 * 0.01, in both groups.
  for (const char* name : {"adamw", "sgd"}) {
    Net net;
    auto optimizer = make(name, {{"lr", 0.1}, {"weight_decay", 0.01}}, net);
    step_with_zero_grads(net, *optimizer);  // sgd: buffers start at the (decayed) gradient
    for (auto& p : net.parameters()) p.mutable_grad() = torch::zeros_like(p);
    const double w0 = net.fc->weight[0][0].item<double>();
    engine_step(*optimizer, {}, 0.5);
    const double expected = std::string(name) == "adamw" ? w0 * (1 - 0.5 * 0.01) : -1;
    if (expected > 0)
      EXPECT_NEAR(net.fc->weight[0][0].item<double>(), expected, 1e-7) << name;
    else
      EXPECT_LT(net.fc->weight[0][0].item<double>(), w0 - 0.4 * 0.01 * w0) << name;
  }
}

TEST(Optimizers, AGroupWithItsOwnLrScalesTheScheduledOne) {
  const auto lr = torch::full({}, 0.3, torch::kDouble);
  EXPECT_TRUE(runner::optim::group_lr_tensor(lr, 0.1, 0.1).is_same(lr)) << "no device op";
  EXPECT_NEAR(runner::optim::group_lr_tensor(lr, 0.05, 0.1).item<double>(), 0.15, 1e-12);
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
  for (auto& group : optimizer->torch_optimizer().param_groups()) count += group.params().size();
  EXPECT_EQ(count, 4u) << "a.weight, a.bias, b.weight, b.bias; not a.weight again, not frozen";
  const auto before = model.a->weight.detach().clone();
  model.a->weight.mutable_grad() = torch::ones_like(model.a->weight);
  engine_step(*optimizer);
  EXPECT_TRUE(torch::allclose(model.a->weight, before - 1.0)) << "stepped twice?";
}

}  // namespace

namespace {

// A fresh optimizer `name` for `model` with `optimizer`'s state, through a checkpoint file.
std::unique_ptr<runner::optim::Optimizer> through_checkpoint(runner::optim::Optimizer& optimizer,
                                                             const std::string& name,
                                                             const nlohmann::json& user,
                                                             torch::nn::Module& model) {
  runner::testing::TempDir dir;
  const std::string path = (dir.path() / "last.pt").string();
  runner::train::save_checkpoint(path, model, &optimizer, {});
  auto fresh = make(name, user, model);
  runner::train::load_checkpoint(path, model, fresh.get());
  return fresh;
}

// The plugins' adam/adamw step with ATen's fused kernels; over 20 steps that must stay within
// 1e-6 of torch::optim::Adam/AdamW (the kernel orders the same arithmetic differently), with two
// parameter groups (one decayed, one not), a parameter that gets no gradient on some steps, a
// step skipped altogether (as the loss scaler skips one) and state that survives a save/load
// halfway.
template <class Reference, class Options>
void expect_same_as_torch(const std::string& name, bool amsgrad,
                          std::tuple<double, double> betas = std::make_tuple(0.9, 0.999),
                          double eps = 1e-8) {
  torch::manual_seed(0);
  auto make_params = [] {
    torch::manual_seed(1);
    return std::vector<torch::Tensor>{torch::randn({4, 3}).requires_grad_(),
                                      torch::randn({3}).requires_grad_(),
                                      torch::randn({2, 2, 3, 3}).requires_grad_()};
  };
  auto ours = make_params();
  auto theirs = make_params();
  nlohmann::json user = {{"lr", 0.01},
                         {"weight_decay", 0.1},
                         {"amsgrad", amsgrad},
                         {"weight_decay_exclude", {"bias", "norm"}},
                         {"betas", {std::get<0>(betas), std::get<1>(betas)}},
                         {"eps", eps}};
  struct Holder : torch::nn::Module {
    explicit Holder(const std::vector<torch::Tensor>& ps) {
      register_parameter("w", ps[0]);
      register_parameter("b", ps[1]);  // 1-d: exempt from weight decay
      register_parameter("k", ps[2]);
    }
  } holder(ours);
  auto optimizer = make(name, user, holder);
  const auto options = Options(0.01).weight_decay(0.1).amsgrad(amsgrad).betas(betas).eps(eps);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<torch::Tensor>{theirs[0], theirs[2]},
                      std::make_unique<Options>(options));
  groups.emplace_back(std::vector<torch::Tensor>{theirs[1]},
                      std::make_unique<Options>(Options(options).weight_decay(0.0)));
  Reference reference(std::move(groups), options);
  for (int step = 0; step < 20; ++step) {
    torch::manual_seed(100 + step);
    for (size_t i = 0; i < ours.size(); ++i) {
      const bool skip = i == 2 && step % 3 == 1;  // no gradient for `k` on some steps
      torch::Tensor g = torch::randn_like(ours[i]);
      ours[i].mutable_grad() = skip ? torch::Tensor() : g.clone();
      theirs[i].mutable_grad() = skip ? torch::Tensor() : g.clone();
    }
    if (step == 10) optimizer = through_checkpoint(*optimizer, name, user, holder);
    if (step == 7) {  // the loss scaler's inf step: skipped on the device, step counts included
      engine_step(*optimizer, torch::ones({1}));
    } else {
      engine_step(*optimizer, torch::zeros({1}));
      reference.step();
    }
    for (size_t i = 0; i < ours.size(); ++i)
      EXPECT_TRUE(torch::allclose(ours[i], theirs[i], /*rtol=*/1e-6, /*atol=*/1e-6))
          << name << " step " << step << " tensor " << i << ": largest difference "
          << (ours[i] - theirs[i]).abs().max().template item<double>();
  }
}

TEST(Optimizers, AdamStepsAsTorchAdam) {
  expect_same_as_torch<torch::optim::Adam, torch::optim::AdamOptions>("adam", false);
  expect_same_as_torch<torch::optim::Adam, torch::optim::AdamOptions>("adam", true);
}

TEST(Optimizers, AdamwStepsAsTorchAdamw) {
  expect_same_as_torch<torch::optim::AdamW, torch::optim::AdamWOptions>("adamw", false);
}

// Non-default betas and eps reach the update: the plugins step exactly as torch with the same
// values (torch with the defaults would differ from the first step on).
TEST(Optimizers, AdamBetasAndEpsStepAsTorchAdam) {
  for (bool amsgrad : {false, true})
    expect_same_as_torch<torch::optim::Adam, torch::optim::AdamOptions>(
        "adam", amsgrad, std::make_tuple(0.8, 0.95), 1e-2);
}

TEST(Optimizers, AdamwBetasEpsAndAmsgradStepAsTorchAdamw) {
  expect_same_as_torch<torch::optim::AdamW, torch::optim::AdamWOptions>("adamw", true);
  for (bool amsgrad : {false, true})
    expect_same_as_torch<torch::optim::AdamW, torch::optim::AdamWOptions>(
        "adamw", amsgrad, std::make_tuple(0.8, 0.95), 1e-2);
}

// The sgd plugin steps with ATen's fused kernel: over 20 steps within 1e-6 of torch::optim::SGD
// (the kernel orders the arithmetic differently), with momentum (dampened or nesterov), weight
// decay on one of two groups, a parameter without a gradient on some steps, a step the loss
// scaler skips and a save/load halfway.
void expect_sgd_same_as_torch(double dampening, bool nesterov) {
  auto make_params = [] {
    torch::manual_seed(1);
    return std::vector<torch::Tensor>{torch::randn({4, 3}).requires_grad_(),
                                      torch::randn({3}).requires_grad_()};
  };
  auto ours = make_params();
  auto theirs = make_params();
  nlohmann::json user = {
      {"lr", 0.05},           {"momentum", 0.9},      {"dampening", dampening},
      {"nesterov", nesterov}, {"weight_decay", 0.01}, {"weight_decay_exclude", {"bias", "norm"}}};
  struct Holder : torch::nn::Module {
    explicit Holder(const std::vector<torch::Tensor>& ps) {
      register_parameter("w", ps[0]);
      register_parameter("b", ps[1]);
    }
  } holder(ours);
  auto optimizer = make("sgd", user, holder);
  const auto options =
      torch::optim::SGDOptions(0.05).momentum(0.9).dampening(dampening).nesterov(nesterov);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<torch::Tensor>{theirs[0]},
                      std::make_unique<torch::optim::SGDOptions>(
                          torch::optim::SGDOptions(options).weight_decay(0.01)));
  groups.emplace_back(std::vector<torch::Tensor>{theirs[1]},
                      std::make_unique<torch::optim::SGDOptions>(options));
  torch::optim::SGD reference(std::move(groups), options);
  for (int step = 0; step < 20; ++step) {
    torch::manual_seed(200 + step);
    for (size_t i = 0; i < ours.size(); ++i) {
      const bool skip = i == 1 && step % 4 == 2;
      torch::Tensor g = torch::randn_like(ours[i]);
      ours[i].mutable_grad() = skip ? torch::Tensor() : g.clone();
      theirs[i].mutable_grad() = skip ? torch::Tensor() : g.clone();
    }
    if (step == 10) optimizer = through_checkpoint(*optimizer, "sgd", user, holder);
    if (step == 5) {
      engine_step(*optimizer, torch::ones({1}));
    } else {
      engine_step(*optimizer, torch::zeros({1}));
      reference.step();
    }
    for (size_t i = 0; i < ours.size(); ++i)
      EXPECT_TRUE(torch::allclose(ours[i], theirs[i], /*rtol=*/1e-6, /*atol=*/1e-6))
          << "sgd dampening " << dampening << " nesterov " << nesterov << " step " << step
          << " tensor " << i << ": largest difference "
          << (ours[i] - theirs[i]).abs().max().item<double>();
  }
}

TEST(Optimizers, SgdStepsAsTorchSgd) {
  expect_sgd_same_as_torch(0.0, false);
  expect_sgd_same_as_torch(0.1, false);
  expect_sgd_same_as_torch(0.0, true);
}

// Checkpoints written by the optimizers of plugin ABI 1 (main at e034d7f, whose Adam kept its
// step count on the host and whose SGD stepped with foreach ops; fixtures/ holds them: a
// Linear(3, 2) + LayerNorm(2) net after 3 steps of adamw with amsgrad, of sgd with momentum)
// load into today's, which then step as torch::optim does from the same file.
template <class Reference>
void expect_old_checkpoint_continues(const std::string& name, const nlohmann::json& user,
                                     Reference reference_of(torch::nn::Module&)) {
  const auto fixture =
      std::filesystem::path(__FILE__).parent_path() / "fixtures" / (name + "_3_steps_e034d7f.pt");
  struct TinyNet : torch::nn::Module {
    TinyNet() {
      fc = register_module("fc", torch::nn::Linear(3, 2));
      norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({2})));
    }
    torch::nn::Linear fc{nullptr};
    torch::nn::LayerNorm norm{nullptr};
  } ours, theirs;
  auto optimizer = make(name, user, ours);
  const auto content = runner::train::load_checkpoint(fixture.string(), ours, optimizer.get());
  EXPECT_EQ(content.meta.value("optimizer_steps", 0), 3);
  // torch's own optimizer reads the same file's state (its format, not runner's code).
  Reference reference = reference_of(theirs);
  {
    torch::serialize::InputArchive archive, model_archive, optimizer_archive;
    archive.load_from(fixture.string());
    archive.read("model", model_archive);
    theirs.load(model_archive);
    archive.read("optimizer", optimizer_archive);
    reference.load(optimizer_archive);
  }
  auto ours_p = ours.parameters(), theirs_p = theirs.parameters();
  for (size_t i = 0; i < ours_p.size(); ++i) ASSERT_TRUE(torch::equal(ours_p[i], theirs_p[i]));
  for (int step = 3; step < 6; ++step) {
    torch::manual_seed(50 + step);
    for (size_t i = 0; i < ours_p.size(); ++i) {
      const auto g = torch::randn_like(ours_p[i]);
      ours_p[i].mutable_grad() = g.clone();
      theirs_p[i].mutable_grad() = g.clone();
    }
    engine_step(*optimizer);
    reference.step();
    for (size_t i = 0; i < ours_p.size(); ++i)
      EXPECT_TRUE(torch::allclose(ours_p[i], theirs_p[i], 1e-6, 1e-6))
          << name << " step " << step << " tensor " << i;
  }
}

TEST(Optimizers, CheckpointsOfTheFirstPluginAbiLoadAndContinue) {
  expect_old_checkpoint_continues<torch::optim::AdamW>(
      // As the run folder's config.yaml of that runner has it: exempt_norm_and_bias false.
      "adamw", {{"lr", 0.01}, {"amsgrad", true}, {"exempt_norm_and_bias", false}},
      [](torch::nn::Module& m) {
        return torch::optim::AdamW(m.parameters(), torch::optim::AdamWOptions(0.01).amsgrad(true));
      });
  expect_old_checkpoint_continues<torch::optim::SGD>(
      "sgd",
      {{"lr", 0.05}, {"momentum", 0.9}, {"weight_decay", 0.01}, {"exempt_norm_and_bias", false}},
      [](torch::nn::Module& m) {
        return torch::optim::SGD(m.parameters(),
                                 torch::optim::SGDOptions(0.05).momentum(0.9).weight_decay(0.01));
      });
}

}  // namespace

// Adam and AdamW under bf16 autocast with a model that reads kept bf16 copies of its weights
// (runner::models::compute_weight, as the native ConvNeXt's MLP does): the update writes the
// copies in the same pass, and training takes the same steps, bit for bit, as with autocast's
// cast every forward (copies off): weights and moments; each copy is its weight's bf16 rounding.
namespace {

struct CopyReadingMlp : torch::nn::Module {
  CopyReadingMlp() {
    fc1 = register_module("fc1", torch::nn::Linear(37, 67));  // 67: a vector part and a tail
    fc2 = register_module("fc2", torch::nn::Linear(67, 10));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    using runner::models::compute_weight;
    const torch::Tensor h =
        torch::linear(x, compute_weight(fc1->weight), compute_weight(fc1->bias));
    return torch::linear(torch::gelu(h), compute_weight(fc2->weight), compute_weight(fc2->bias));
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};

struct Trained {
  std::vector<torch::Tensor> params, copies;
};

Trained train_under_bf16(const std::string& optimizer_name, const nlohmann::json& user,
                         bool copies) {
  runner::models::set_compute_copies(copies);
  torch::manual_seed(11);
  CopyReadingMlp model;
  auto optimizer = make(optimizer_name, user, model);
  const torch::Tensor x = torch::randn({16, 37});
  const torch::Tensor y = torch::randint(0, 10, {16});
  for (int step = 0; step < 4; ++step) {
    optimizer->torch_optimizer().zero_grad();
    torch::Tensor logits;
    {
      at::autocast::set_autocast_enabled(at::kCPU, true);
      at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
      logits = model.forward(x);
      at::autocast::set_autocast_enabled(at::kCPU, false);
      at::autocast::clear_cache();
    }
    torch::nn::functional::cross_entropy(logits.to(torch::kFloat), y).backward();
    engine_step(*optimizer, {}, 1e-2 * (step + 1));  // a scheduled lr
  }
  Trained out;
  for (const auto& p : model.parameters()) {
    out.params.push_back(p.detach().clone());
    out.copies.push_back(runner::models::compute_copy_to_write(p));
  }
  runner::models::set_compute_copies(true);
  return out;
}

bool same_float_bits(const torch::Tensor& a, const torch::Tensor& b) {
  return torch::equal(a.view(torch::kInt32), b.view(torch::kInt32));
}

}  // namespace

TEST(Optimizers, AdamAndAdamwWriteTheBf16CopiesAndStepAsWithAutocastsCast) {
  const std::vector<std::pair<std::string, nlohmann::json>> cases = {
      {"adam", nlohmann::json::object()},
      {"adam", {{"weight_decay", 0.05}, {"betas", {0.3, 0.99}}}},  // ATen's other lerp form
      {"adamw", nlohmann::json::object()},
      {"adamw", {{"weight_decay", 0.2}, {"weight_decay_exclude", nlohmann::json::array()}}}};
  for (const auto& [name, user] : cases) {
    const Trained with = train_under_bf16(name, user, true);
    const Trained without = train_under_bf16(name, user, false);
    ASSERT_EQ(with.params.size(), without.params.size());
    for (size_t i = 0; i < with.params.size(); ++i) {
      EXPECT_TRUE(same_float_bits(with.params[i], without.params[i]))
          << name << " " << user << " #" << i;
      ASSERT_TRUE(with.copies[i].defined()) << name << ": the update keeps a copy of every weight";
      EXPECT_TRUE(torch::equal(with.copies[i].view(torch::kInt16),
                               with.params[i].to(torch::kBFloat16).view(torch::kInt16)))
          << name << " #" << i;
      EXPECT_FALSE(without.copies[i].defined());
    }
  }
}

TEST(Optimizers, TheProbesVerdictIsWhatTheTrainingDoes) {
  // Supported: the bf16 training above steps every copied weight with runner's kernel; not
  // supported (ATen's DEFAULT kernels, a CPU without FMA): with ATen, then copies; the same bits
  // both ways (the test above, run by ctest under each ATEN_CPU_CAPABILITY).
  const bool supported = runner::optim::adam_with_copy_supported();
  const int64_t before = runner::optim::adam_with_copy_tensors_stepped();
  train_under_bf16("adamw", nlohmann::json::object(), true);
  const int64_t stepped = runner::optim::adam_with_copy_tensors_stepped() - before;
  EXPECT_EQ(stepped, supported ? 4 * 4 : 0)
      << at::get_cpu_capability() << ": " << runner::optim::adam_with_copy_description();
  EXPECT_EQ(runner::models::compute_copy_writer(), runner::optim::adam_with_copy_description());
}

TEST(Optimizers, RunnersAdamKernelIsTheOneThatRunsOnAvx2AndAvx512Machines) {
  // The probe measures how ATen's kernel splits and checks every branch; on the machines this
  // project builds on (ATen 2.11's AVX2 kernels, which it also runs under AVX512: its fused
  // Adam has no AVX512 registration) runner's must pass, or the copies cost a second pass.
  const std::string capability = at::get_cpu_capability();
  if ((capability != "AVX2" && capability != "AVX512") || !runner::optim::cpu_has_avx2_fma())
    GTEST_SKIP() << "ATen runs its " << capability << " kernels here";
  EXPECT_TRUE(runner::optim::adam_with_copy_supported())
      << capability << ": " << runner::optim::adam_with_copy_description();
}
