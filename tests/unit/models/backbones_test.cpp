// Every registered backbone: timm's parameter counts, any input shape, stochastic depth,
// mixed precision and safetensors export.

#include <filesystem>

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>

#include "config/pretrained_source.hpp"
#include "io/safetensors.hpp"
#include "model_test_util.hpp"
#include "models/pretrained.hpp"
#include "runner/error.hpp"
#include "train/checkpoint.hpp"

namespace {

using runner::test::make_model;
using runner::test::relative_error;

int64_t parameter_count(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

std::vector<std::string> timm_backbones() {
  std::vector<std::string> out;
  for (const auto& name : runner::registries().models.names())
    if (name != "small_cnn" && !runner::config::is_scripted_backbone(name)) out.push_back(name);
  return out;
}

TEST(Backbones, AllListedBackbonesAreRegistered) {
  for (const char* name : {"resnet10t", "resnet14t", "resnet18", "resnet26", "resnet34", "resnet50",
                           "convnext_atto", "convnext_femto", "convnext_pico", "convnext_nano",
                           "convnext_tiny", "convnext_small", "convnext_base", "small_cnn"}) {
    const auto* entry = runner::registries().models.find(name);
    ASSERT_NE(entry, nullptr) << name;
    EXPECT_EQ(entry->schema.at("additionalProperties"), false);
    EXPECT_FALSE(entry->help.empty());
  }
}

TEST(Backbones, ParameterCountsForThreeChannelsAndThousandClassesEqualTimms) {
  // Exact counts: timm's and torchvision's (identical architectures) for these six.
  const std::map<std::string, int64_t> exact = {
      {"resnet18", 11689512},      {"resnet34", 21797672},       {"resnet50", 25557032},
      {"convnext_tiny", 28589128}, {"convnext_small", 50223688}, {"convnext_base", 88591464}};
  // The rest as timm's model cards publish them, in millions to one decimal.
  const std::map<std::string, double> published_m = {
      {"resnet10t", 5.4},     {"resnet14t", 10.1},     {"resnet26", 16.0},
      {"convnext_atto", 3.7}, {"convnext_femto", 5.2}, {"convnext_pico", 9.0},
      {"convnext_nano", 15.6}};
  torch::NoGradGuard no_grad;
  for (const auto& name : timm_backbones()) {
    int64_t n = parameter_count(*make_model(name, 3, 1000));
    if (exact.count(name)) {
      EXPECT_EQ(n, exact.at(name)) << name;
    } else {
      ASSERT_TRUE(published_m.count(name)) << "no published count for " << name;
      EXPECT_NEAR(n / 1e6, published_m.at(name), 0.05) << name << ": " << n;
    }
  }
}

TEST(Backbones, AnyInputShapeChannelCountAndClassCount) {
  torch::NoGradGuard no_grad;
  for (const auto& name : runner::registries().models.names()) {
    // timm/<name> and torchscript: built by timm (tests/integration/timm_scripted_test.py).
    if (runner::config::is_scripted_backbone(name)) continue;
    for (int64_t in_chans : {1, 2}) {
      auto model = make_model(name, in_chans, 7);
      model->eval();
      torch::Tensor x = torch::randn({2, in_chans, 40, 52});  // not square, not a multiple of 32
      torch::Tensor logits = model->forward(x);
      EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{2, 7})) << name;
      EXPECT_TRUE(torch::isfinite(logits).all().item<bool>()) << name;
      torch::Tensor features = model->forward_head(model->forward_features(x), true);
      EXPECT_EQ(features.dim(), 2) << name;
      EXPECT_TRUE(torch::allclose(model->forward_head(model->forward_features(x), false), logits))
          << name;
    }
  }
}

TEST(Backbones, ForwardBackwardReachesEveryParameter) {
  for (const char* name : {"convnext_atto", "resnet10t", "resnet14t", "small_cnn"}) {
    auto model = make_model(name, 1, 10);
    model->train();
    model->forward(torch::randn({2, 1, 32, 32})).sum().backward();
    for (const auto& p : model->named_parameters())
      EXPECT_TRUE(p.value().grad().defined()) << name << " " << p.key();
  }
}

TEST(Backbones, StochasticDepthActsOnlyInTrainMode) {
  torch::manual_seed(0);
  for (const char* name : {"convnext_atto", "resnet10t"}) {
    torch::NoGradGuard no_grad;
    auto make = [&](double drop_path_rate) {
      nlohmann::json params = {{"backbone", name},
                               {"in_chans", 1},
                               {"num_classes", 10},
                               {"drop_path_rate", drop_path_rate},
                               {"pretrained", false}};
      // timm's ResNet init zeroes each residual branch, which would hide stochastic depth.
      if (std::string(name) == "resnet10t") params["zero_init_last"] = false;
      return runner::registries().models.at(name).factory(params);
    };
    auto dropped = make(0.5);
    auto plain = make(0.0);
    torch::Tensor x = torch::randn({8, 1, 32, 32});
    dropped->train();
    EXPECT_FALSE(torch::equal(dropped->forward(x), dropped->forward(x))) << name;
    plain->train();
    EXPECT_TRUE(torch::equal(plain->forward(x), plain->forward(x))) << name;
    dropped->eval();
    EXPECT_TRUE(torch::equal(dropped->forward(x), dropped->forward(x))) << name;
  }
}

TEST(Backbones, DropRateIsDropoutOnThePooledFeaturesAsTimms) {
  // timm's drop_rate: dropout after pooling (and the head's norm), before the classifier and
  // before forward_head's pre_logits return, in training only.
  torch::manual_seed(0);
  torch::NoGradGuard no_grad;
  for (const char* name : {"small_cnn", "resnet10t", "convnext_atto"}) {
    auto make = [&](double drop_rate) {
      nlohmann::json params = {{"backbone", name},
                               {"in_chans", 1},
                               {"num_classes", 10},
                               {"drop_rate", drop_rate},
                               {"pretrained", false}};
      return runner::registries().models.at(name).factory(params);
    };
    auto dropped = make(0.5);
    auto plain = make(0.0);
    torch::Tensor x = torch::randn({8, 1, 32, 32});
    dropped->train();
    EXPECT_FALSE(torch::equal(dropped->forward(x), dropped->forward(x))) << name;
    // Two draws over the same features: different zeros, the same scaled values elsewhere.
    const torch::Tensor features = dropped->forward_features(x);
    const torch::Tensor a = dropped->forward_head(features, true);
    const torch::Tensor b = dropped->forward_head(features, true);
    EXPECT_EQ(a.dim(), 2) << name;
    EXPECT_FALSE(torch::equal(a, b)) << name;
    const torch::Tensor both = (a != 0).logical_and(b != 0);
    EXPECT_GT(both.sum().item<int64_t>(), 0) << name;
    EXPECT_TRUE(torch::equal(a.masked_select(both), b.masked_select(both))) << name;
    plain->train();
    EXPECT_TRUE(torch::equal(plain->forward(x), plain->forward(x))) << name;
    dropped->eval();
    EXPECT_TRUE(torch::equal(dropped->forward(x), dropped->forward(x))) << name;
  }
}

TEST(Backbones, ReducedPrecisionForwardOnCpu) {
  torch::NoGradGuard no_grad;
  for (const char* name : {"convnext_atto", "resnet10t", "small_cnn"}) {
    auto model = make_model(name, 1, 10);
    model->eval();
    torch::Tensor x = torch::randn({2, 1, 32, 32});
    torch::Tensor reference = model->forward(x);
    // CPU autocast to bfloat16: LayerNorm must run in float32 internally and not crash.
    at::autocast::set_cpu_enabled(true);
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    torch::Tensor mixed;
    EXPECT_NO_THROW(mixed = model->forward(x)) << name;
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    ASSERT_TRUE(mixed.defined());
    EXPECT_TRUE(torch::isfinite(mixed).all().item<bool>()) << name;
    EXPECT_LE(relative_error(mixed.to(torch::kFloat), reference), 0.1) << name;
    // A model cast to bfloat16 as a whole gives bfloat16 logits.
    model->to(torch::kBFloat16);
    torch::Tensor half = model->forward(x.to(torch::kBFloat16));
    EXPECT_EQ(half.scalar_type(), torch::kBFloat16) << name;
    EXPECT_LE(relative_error(half.to(torch::kFloat), reference), 0.1) << name;
  }
}

TEST(Backbones, ExportedSafetensorsLoadBackIntoAFreshModel) {
  torch::NoGradGuard no_grad;
  std::string path = (std::filesystem::temp_directory_path() /
                      ("runner_export_" + std::to_string(::getpid()) + ".safetensors"))
                         .string();
  for (const char* name : {"convnext_atto", "resnet10t", "small_cnn"}) {
    auto trained = make_model(name, 1, 10);
    trained->train();
    trained->forward(torch::randn({4, 1, 32, 32}));  // moves BN running statistics
    trained->eval();
    runner::models::save_model_safetensors(*trained, path);
    auto file = runner::io::read_safetensors(path);
    auto sd = runner::models::state_dict(*trained);
    ASSERT_EQ(file.tensors.size(), sd.size());
    for (size_t i = 0; i < sd.size(); ++i) EXPECT_EQ(file.tensors[i].first, sd[i].first);

    auto fresh = make_model(name, 1, 10);
    runner::models::load_state_dict_safetensors(*fresh, path);
    fresh->eval();
    torch::Tensor x = torch::randn({2, 1, 32, 32});
    EXPECT_TRUE(torch::equal(fresh->forward(x), trained->forward(x))) << name;
  }
  std::remove(path.c_str());
}

// model.pretrained naming a run's checkpoint reads its model part by state_dict names.
TEST(Backbones, ACheckpointsModelTensorsAreItsStateDictByName) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("runner_ckpt_" + std::to_string(::getpid()) + ".pt"))
                               .string();
  for (const char* name : {"convnext_atto", "resnet10t"}) {
    auto trained = make_model(name, 1, 10);
    trained->train();
    trained->forward(torch::randn({4, 1, 32, 32}));  // moves BN running statistics
    runner::train::save_checkpoint(path, *trained, nullptr, {});
    const auto tensors =
        runner::train::read_checkpoint_tensors(path, runner::train::CheckpointWeights::kModel);
    const auto sd = runner::models::state_dict(*trained);
    ASSERT_EQ(tensors.size(), sd.size()) << name;
    for (const auto& [key, value] : sd) {
      ASSERT_TRUE(tensors.count(key)) << name << ": " << key;
      EXPECT_TRUE(torch::equal(tensors.at(key), value)) << name << ": " << key;
    }
    EXPECT_THROW(
        runner::train::read_checkpoint_tensors(path, runner::train::CheckpointWeights::kEma),
        runner::DataError)
        << "a checkpoint without train.ema's average";
  }
  std::remove(path.c_str());
}

TEST(Backbones, TimmStyleNamesForLinearMlpVariants) {
  auto model = make_model("convnext_tiny", 3, 1000);
  std::map<std::string, std::vector<int64_t>> shapes;
  for (auto& [name, t] : runner::models::state_dict(*model)) shapes[name] = t.sizes().vec();
  EXPECT_EQ(shapes.at("stages.0.blocks.0.mlp.fc1.weight"), (std::vector<int64_t>{384, 96}));
  EXPECT_EQ(shapes.at("stages.3.blocks.2.mlp.fc2.weight"), (std::vector<int64_t>{768, 3072}));
  EXPECT_EQ(shapes.at("stages.3.downsample.1.weight"), (std::vector<int64_t>{768, 384, 2, 2}));
  auto r50 = make_model("resnet50", 3, 1000);
  std::map<std::string, std::vector<int64_t>> r;
  for (auto& [name, t] : runner::models::state_dict(*r50)) r[name] = t.sizes().vec();
  EXPECT_EQ(r.at("conv1.weight"), (std::vector<int64_t>{64, 3, 7, 7}));
  EXPECT_EQ(r.at("layer1.0.downsample.0.weight"), (std::vector<int64_t>{256, 64, 1, 1}));
  EXPECT_EQ(r.at("layer4.2.conv3.weight"), (std::vector<int64_t>{2048, 512, 1, 1}));
  EXPECT_EQ(r.at("fc.weight"), (std::vector<int64_t>{1000, 2048}));
}

TEST(Backbones, ResNetInitZeroesTheLastNormOfEachBlock) {
  auto model = make_model("resnet18", 3, 1000);
  for (auto& [name, t] : runner::models::state_dict(*model)) {
    if (name.find(".bn2.weight") != std::string::npos)
      EXPECT_EQ(t.abs().sum().item<double>(), 0.0) << name;
    if (name.find(".bn1.weight") != std::string::npos)
      EXPECT_TRUE(t.eq(1).all().item<bool>()) << name;
  }
}

}  // namespace

namespace runner {
namespace {

// timm zero-initialises each residual block's last BatchNorm weight; zero_init_last: false
// starts them at 1 as torchvision does (the benchmark's baseline).
TEST(Backbones, ResnetZeroInitLastIsAParameter) {
  auto last_bn_weights = [](bool zero_init_last) {
    nlohmann::json params = {{"backbone", "resnet18"}, {"in_chans", 1},
                             {"num_classes", 10},      {"drop_path_rate", 0.0},
                             {"pretrained", false},    {"zero_init_last", zero_init_last}};
    auto model = registries().models.at("resnet18").factory(params);
    std::vector<double> sums;
    for (const auto& p : model->named_parameters()) {
      if (p.key().find(".bn2.weight") != std::string::npos)
        sums.push_back(p.value().abs().sum().item<double>());
    }
    return sums;
  };
  const auto zeroed = last_bn_weights(true);
  const auto ones = last_bn_weights(false);
  ASSERT_EQ(zeroed.size(), 8u);  // 2+2+2+2 basic blocks
  for (double s : zeroed) EXPECT_EQ(s, 0.0);
  for (double s : ones) EXPECT_GT(s, 0.0);
}

}  // namespace
}  // namespace runner
