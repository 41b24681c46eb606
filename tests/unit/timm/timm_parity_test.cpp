// Every registered backbone against the real timm (requirements.txt): eval and train-mode logits
// and the input gradient on two input shapes, timm's adapt_input_conv, and timm's own
// load_pretrained. The references are made in the same ctest run by tests/timm/make_timm_refs.py
// (fixture `timm_refs`), from the names `runner plugins models --json` lists.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../models/model_test_util.hpp"
#include "config/pretrained_source.hpp"
#include "io/safetensors.hpp"
#include "models/pretrained.hpp"
#include "runner/models/timm_import.hpp"
#include "runner/registries.hpp"

namespace {

using runner::test::make_model;
using runner::test::relative_error;

constexpr double kTolerance = 1e-4;
// Backbones of runner's own that timm does not have.
const std::set<std::string> kNotTimm = {"small_cnn"};

std::string refs_dir() {
  const char* dir = std::getenv("RUNNER_TIMM_REFS");
  return dir ? dir : "";
}

nlohmann::json manifest() {
  std::ifstream in(refs_dir() + "/manifest.json");
  return in ? nlohmann::json::parse(in) : nlohmann::json();
}

#define REQUIRE_REFS()                                                                       \
  if (refs_dir().empty())                                                                    \
    GTEST_SKIP() << "RUNNER_TIMM_REFS is unset: run through ctest, whose timm_refs fixture " \
                    "makes the references with the real timm";                               \
  ASSERT_TRUE(manifest().is_object()) << "no manifest.json in " << refs_dir()

std::string ref_file(const std::string& file) { return refs_dir() + "/" + file; }

TEST(TimmParity, EveryRegisteredBackboneIsATimmModelOrKnownOwn) {
  REQUIRE_REFS();
  const auto m = manifest();
  for (const auto& name : runner::registries().models.names()) {
    if (kNotTimm.count(name) || runner::config::is_scripted_backbone(name)) continue;
    EXPECT_TRUE(m["models"].contains(name))
        << name << " has no timm reference (timm " << m["timm_version"] << " lacks it?)";
  }
}

TEST(TimmParity, EvalTrainLogitsAndInputGradientEqualTimms) {
  REQUIRE_REFS();
  const auto m = manifest();
  for (const auto& [name, info] : m["models"].items()) {
    SCOPED_TRACE(name);
    for (size_t k = 0; k < info["shapes"].size(); ++k) {
      SCOPED_TRACE("shape " + info["shapes"][k].dump());
      auto model = make_model(name, 1, 10);
      runner::models::load_state_dict_safetensors(*model, ref_file(name + ".weights.safetensors"));
      auto r = runner::io::read_safetensors(
          ref_file(name + ".shape" + std::to_string(k) + ".safetensors"));
      torch::Tensor x = r.find("input");
      model->eval();
      {
        torch::NoGradGuard no_grad;
        EXPECT_LE(relative_error(model->forward(x), r.find("eval_logits")), kTolerance);
      }
      model->train();
      {
        torch::NoGradGuard no_grad;
        EXPECT_LE(relative_error(model->forward(x), r.find("train_logits")), kTolerance);
      }
      // The gradient in float64 (see make_timm_refs.py: float32 is ill-conditioned here).
      auto model64 = make_model(name, 1, 10);
      runner::models::load_state_dict_safetensors(*model64,
                                                  ref_file(name + ".weights.safetensors"));
      model64->to(torch::kDouble);
      model64->train();
      torch::Tensor xg = x.to(torch::kDouble).requires_grad_(true);
      (model64->forward(xg) * r.find("probe").to(torch::kDouble)).sum().backward();
      ASSERT_TRUE(xg.grad().defined());
      EXPECT_LE(relative_error(xg.grad(), r.find("input_grad_f64")), kTolerance);
    }
  }
}

TEST(TimmParity, FirstConvAdaptationEqualsTimmsAdaptInputConv) {
  REQUIRE_REFS();
  const auto m = manifest();
  for (const auto& [name, info] : m["models"].items()) {
    SCOPED_TRACE(name);
    auto model = make_model(name, 1, 10);
    EXPECT_EQ(model->first_conv(), info["first_conv"].get<std::string>());
    EXPECT_EQ(model->classifier(), info["classifier"].get<std::string>());
    auto r = runner::io::read_safetensors(ref_file(name + ".adapt.safetensors"));
    for (int64_t in_chans : {1, 2, 4}) {
      torch::Tensor mine = runner::models::adapt_input_conv(in_chans, r.find("rgb_weight"));
      EXPECT_LE(relative_error(mine, r.find("adapted_in" + std::to_string(in_chans))), 1e-6)
          << "in_chans " << in_chans;
    }
  }
}

// model.pretrained: true loads timm's default tag of the backbone from the Hugging Face cache.
TEST(TimmParity, PretrainedTrueNamesTimmsDefaultTag) {
  REQUIRE_REFS();
  const auto m = manifest();
  for (const auto& [name, info] : m["models"].items())
    EXPECT_EQ(runner::config::timm_default_tag(name), info["default_tag"].get<std::string>())
        << name << " (timm " << m["timm_version"] << ")";
}

TEST(TimmParity, LoadPretrainedGivesTheFeaturesOfTimmsLoadPretrained) {
  REQUIRE_REFS();
  int checked = 0;
  const auto m = manifest();
  for (const auto& [name, info] : m["models"].items()) {
    if (!std::filesystem::exists(ref_file(name + ".pretrained.safetensors"))) continue;
    SCOPED_TRACE(name);
    torch::NoGradGuard no_grad;
    auto model = make_model(name, 1, 10);
    runner::models::load_pretrained(*model, ref_file(name + ".in3c1000.safetensors"), 1, 10);
    model->eval();
    auto r = runner::io::read_safetensors(ref_file(name + ".pretrained.safetensors"));
    torch::Tensor features = model->forward_head(model->forward_features(r.find("input")), true);
    EXPECT_LE(relative_error(features, r.find("features")), kTolerance);
    ++checked;
  }
  EXPECT_GE(checked, 2) << "the fixture makes load_pretrained references for two backbones";
}

}  // namespace
