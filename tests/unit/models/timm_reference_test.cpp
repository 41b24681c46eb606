// The backbones against outputs made with timm itself (shared/reference/timm, README there).

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "io/safetensors.hpp"
#include "model_test_util.hpp"
#include "models/pretrained.hpp"
#include "runner/error.hpp"
#include "runner/models/batch_norm.hpp"

namespace {

using runner::test::make_model;
using runner::test::relative_error;
using runner::test::timm_reference;

constexpr double kTolerance = 1e-4;

class TimmReference : public ::testing::TestWithParam<std::string> {};

TEST_P(TimmReference, StateDictNamesDtypesAndShapesEqualTimms) {
  RUNNER_REQUIRE_SHARED_TIMM_REFERENCES();
  auto model = make_model(GetParam(), 1, 10);
  std::ifstream names(timm_reference(GetParam() + ".names.txt"));
  ASSERT_TRUE(names) << "missing reference " << GetParam();
  auto sd = runner::models::state_dict(*model);
  size_t i = 0;
  for (std::string line; std::getline(names, line); ++i) {
    ASSERT_LT(i, sd.size()) << "model lacks " << line;
    const auto& t = sd[i].second;
    std::string dtype = t.scalar_type() == torch::kFloat  ? "F32"
                        : t.scalar_type() == torch::kLong ? "I64"
                                                          : "?";
    std::ostringstream mine;
    mine << sd[i].first << " " << dtype << " [";
    for (int64_t d = 0; d < t.dim(); ++d) mine << (d ? "," : "") << t.size(d);
    mine << "]";
    EXPECT_EQ(mine.str(), line) << "state_dict entry " << i;
  }
  EXPECT_EQ(i, sd.size()) << "model has more entries than timm's";
}

TEST_P(TimmReference, In1c10WeightsGiveTimmsOutputs) {
  RUNNER_REQUIRE_SHARED_TIMM_REFERENCES();
  torch::NoGradGuard no_grad;
  auto model = make_model(GetParam(), 1, 10);
  runner::models::load_state_dict_safetensors(*model,
                                              timm_reference(GetParam() + ".in1c10.safetensors"));
  model->eval();
  auto ref = runner::io::read_safetensors(timm_reference(GetParam() + ".in1c10.input.safetensors"));
  torch::Tensor input = ref.find("input");
  torch::Tensor feature_map = model->forward_features(input);
  EXPECT_LE(relative_error(feature_map, ref.find("feature_map")), kTolerance);
  EXPECT_LE(relative_error(model->forward_head(feature_map, true), ref.find("features")),
            kTolerance);
  EXPECT_LE(relative_error(model->forward(input), ref.find("logits")), kTolerance);
}

TEST_P(TimmReference, In3c1000CheckpointAdaptsToOneChannelAsTimmDoes) {
  RUNNER_REQUIRE_SHARED_TIMM_REFERENCES();
  torch::NoGradGuard no_grad;
  auto model = make_model(GetParam(), 1, 10);
  const std::string classifier = model->classifier() + ".weight";
  torch::Tensor fresh_fc;
  for (auto& [name, t] : runner::models::state_dict(*model))
    if (name == classifier) fresh_fc = t.clone();
  runner::models::load_pretrained(*model, timm_reference(GetParam() + ".in3c1000.safetensors"), 1,
                                  10);
  model->eval();
  auto ref = runner::io::read_safetensors(timm_reference(GetParam() + ".adapted.safetensors"));
  EXPECT_EQ(ref.metadata.at("first_conv"), model->first_conv());
  auto sd = runner::models::state_dict(*model);
  for (auto& [name, t] : sd) {
    if (name == model->first_conv() + ".weight")
      EXPECT_LE(relative_error(t, ref.find("first_conv_weight")), 1e-6);
    if (name == classifier) EXPECT_TRUE(torch::equal(t, fresh_fc)) << "classifier was overwritten";
  }
  torch::Tensor features = model->forward_head(model->forward_features(ref.find("input")), true);
  EXPECT_LE(relative_error(features, ref.find("features")), kTolerance);
}

TEST_P(TimmReference, In3c1000CheckpointWithItsClassifierGivesTimmsRgbLogits) {
  RUNNER_REQUIRE_SHARED_TIMM_REFERENCES();
  torch::NoGradGuard no_grad;
  auto model = make_model(GetParam(), 3, 1000);
  runner::models::load_pretrained(*model, timm_reference(GetParam() + ".in3c1000.safetensors"), 3,
                                  1000);
  model->eval();
  auto ref = runner::io::read_safetensors(timm_reference(GetParam() + ".adapted.safetensors"));
  torch::Tensor rgb = ref.find("input").repeat({1, 3, 1, 1});
  EXPECT_LE(relative_error(model->forward(rgb), ref.find("logits_rgb")), kTolerance);
}

TEST_P(TimmReference, OtherChannelCountsAreTiledAndScaled) {
  RUNNER_REQUIRE_SHARED_TIMM_REFERENCES();
  torch::NoGradGuard no_grad;
  auto model = make_model(GetParam(), 5, 10);
  const std::string path = timm_reference(GetParam() + ".in3c1000.safetensors");
  runner::models::load_pretrained(*model, path, 5, 10);
  torch::Tensor rgb = runner::io::read_safetensors(path).find(model->first_conv() + ".weight");
  // timm: repeat(1, ceil(5/3), 1, 1)[:, :5] * 3/5 -> channels R G B R G.
  torch::Tensor expected = torch::cat({rgb, rgb.slice(1, 0, 2)}, 1) * (3.0 / 5.0);
  for (auto& [name, t] : runner::models::state_dict(*model))
    if (name == model->first_conv() + ".weight") EXPECT_LE(relative_error(t, expected), 1e-6);
}

TEST_P(TimmReference, FolderWithModelSafetensorsAndMissingBatchCountersLoad) {
  RUNNER_REQUIRE_SHARED_TIMM_REFERENCES();
  namespace fs = std::filesystem;
  auto checkpoint =
      runner::io::read_safetensors(timm_reference(GetParam() + ".in1c10.safetensors"));
  std::vector<std::pair<std::string, torch::Tensor>> kept;
  for (auto& kv : checkpoint.tensors)
    if (kv.first.find("num_batches_tracked") == std::string::npos) kept.push_back(kv);
  fs::path dir =
      fs::temp_directory_path() / ("runner_hub_" + GetParam() + std::to_string(::getpid()));
  fs::create_directories(dir);
  runner::io::write_safetensors((dir / "model.safetensors").string(), kept);
  auto model = make_model(GetParam(), 1, 10);
  EXPECT_NO_THROW(runner::models::load_pretrained(*model, dir.string(), 1, 10));
  fs::remove_all(dir);
}

TEST_P(TimmReference, MismatchedCheckpointIsOneClearError) {
  RUNNER_REQUIRE_SHARED_TIMM_REFERENCES();
  auto model = make_model(GetParam(), 1, 10);
  std::string other = GetParam() == "resnet10t" ? "convnext_atto" : "resnet10t";
  std::string path = timm_reference(other + ".in1c10.safetensors");
  try {
    runner::models::load_pretrained(*model, path, 1, 10);
    FAIL() << "loading " << other << " into " << GetParam() << " did not throw";
  } catch (const runner::DataError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("missing keys"), std::string::npos) << msg;
    EXPECT_NE(msg.find("unexpected keys"), std::string::npos) << msg;
  }
  // A 1-channel checkpoint into a 3-channel model with the strict loader: a mis-shaped key.
  auto rgb = make_model(GetParam(), 3, 10);
  try {
    runner::models::load_state_dict_safetensors(*rgb,
                                                timm_reference(GetParam() + ".in1c10.safetensors"));
    FAIL() << "mis-shaped first conv was accepted";
  } catch (const runner::DataError& e) {
    EXPECT_NE(std::string(e.what()).find("mis-shaped keys: " + rgb->first_conv() + ".weight"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(runner::models::load_pretrained(*model, "/nonexistent/weights", 1, 10),
               runner::DataError);
}

INSTANTIATE_TEST_SUITE_P(Backbones, TimmReference, ::testing::Values("convnext_atto", "resnet10t"));

}  // namespace

namespace {

// Runs every element of a Sequential child of `model` named `name` on x.
torch::Tensor run_sequential(torch::nn::Module& model, const std::string& name, torch::Tensor x) {
  auto seq = std::dynamic_pointer_cast<torch::nn::SequentialImpl>(model.named_children()[name]);
  EXPECT_TRUE(seq) << name << " is not a Sequential";
  return seq->forward(x);
}

TEST(TimmIntermediates, ConvNextStemAndStagesMatchTimm) {
  RUNNER_REQUIRE_SHARED_TIMM_REFERENCES();
  torch::NoGradGuard no_grad;
  auto model = make_model("convnext_atto", 1, 10);
  runner::models::load_state_dict_safetensors(*model,
                                              timm_reference("convnext_atto.in1c10.safetensors"));
  model->eval();
  auto ref = runner::io::read_safetensors(timm_reference("convnext_atto.in1c10.input.safetensors"));
  torch::Tensor x = run_sequential(*model, "stem", ref.find("input"));
  EXPECT_LE(relative_error(x, ref.find("inter.stem")), kTolerance);
  auto stages =
      std::dynamic_pointer_cast<torch::nn::SequentialImpl>(model->named_children()["stages"]);
  ASSERT_TRUE(stages);
  int i = 0;
  for (auto& stage : *stages) {
    x = stage.forward(x);
    EXPECT_LE(relative_error(x, ref.find("inter.stages." + std::to_string(i))), kTolerance) << i;
    ++i;
  }
  EXPECT_EQ(i, 4);
}

TEST(TimmIntermediates, ResNetStemAndLayersMatchTimm) {
  RUNNER_REQUIRE_SHARED_TIMM_REFERENCES();
  torch::NoGradGuard no_grad;
  auto model = make_model("resnet10t", 1, 10);
  runner::models::load_state_dict_safetensors(*model,
                                              timm_reference("resnet10t.in1c10.safetensors"));
  model->eval();
  auto ref = runner::io::read_safetensors(timm_reference("resnet10t.in1c10.input.safetensors"));
  torch::Tensor x = run_sequential(*model, "conv1", ref.find("input"));
  EXPECT_LE(relative_error(x, ref.find("inter.conv1")), kTolerance);
  // Built-in models use runner's syncable BatchNorm2d (runner/models/batch_norm.hpp).
  auto bn1 =
      std::dynamic_pointer_cast<runner::models::BatchNorm2dImpl>(model->named_children()["bn1"]);
  ASSERT_TRUE(bn1);
  x = bn1->forward(x);
  EXPECT_LE(relative_error(x, ref.find("inter.bn1")), kTolerance);
  x = torch::relu(x);
  EXPECT_LE(relative_error(x, ref.find("inter.act1")), kTolerance);
  x = torch::max_pool2d(x, 3, 2, 1);
  EXPECT_LE(relative_error(x, ref.find("inter.maxpool")), kTolerance);
  for (int i = 1; i <= 4; ++i) {
    x = run_sequential(*model, "layer" + std::to_string(i), x);
    EXPECT_LE(relative_error(x, ref.find("inter.layer" + std::to_string(i))), kTolerance) << i;
  }
}

}  // namespace
