// Test-only plugins that fail only as a run really trains (tests/integration/preflight_test.py):
// `runner validate` must find them by stepping the run's own step, not a step of its own.
//   loss hard_labels_only: says it takes soft targets, then refuses them (train.mixup's).
//   backbone float32_only: a small CNN that refuses activations in any other precision, as a
//     model with an op that has no bf16 kernel does under autocast.
//   backbone counted_cnn: float32_only's layers without the refusal, appending a line to the
//     file $RUNNER_TEST_MODEL_BUILDS each time one is built (how many times a command builds it).

#include <cstdlib>
#include <fstream>

#include <torch/torch.h>

#include "runner/losses/loss.hpp"
#include "runner/models/model.hpp"
#include "runner/plugin_api.hpp"
#include "runner/plugin_schemas.hpp"

namespace {

namespace nn = torch::nn;

class HardLabelsOnly final : public runner::losses::Loss, public runner::losses::TakesSoftTargets {
 public:
  torch::Tensor compute(const torch::Tensor& logits, const torch::Tensor& targets) override {
    TORCH_CHECK(!targets.is_floating_point(),
                "hard_labels_only takes class indices, got class probabilities ", targets.sizes());
    return torch::nn::functional::cross_entropy(logits, targets);
  }
};

class Float32Only : public runner::models::Model {
 public:
  explicit Float32Only(const runner::models::ModelOptions& o, bool any_precision = false)
      : any_precision_(any_precision) {
    conv_ = register_module("conv", nn::Conv2d(nn::Conv2dOptions(o.in_chans, 8, 3).padding(1)));
    fc_ = register_module("fc", nn::Linear(8, o.num_classes));
  }
  torch::Tensor forward_features(torch::Tensor x) override {
    torch::Tensor features = torch::relu(conv_(x));
    TORCH_CHECK(any_precision_ || features.scalar_type() == torch::kFloat,
                "float32_only needs float32 activations, got ", features.scalar_type());
    return features;
  }
  torch::Tensor forward_head(torch::Tensor x, bool pre_logits) override {
    x = x.mean({2, 3});
    return pre_logits ? x : fc_(x);
  }
  std::string first_conv() const override { return "conv"; }
  std::string classifier() const override { return "fc"; }

 private:
  bool any_precision_;
  nn::Conv2d conv_{nullptr};
  nn::Linear fc_{nullptr};
};

class CountedCnn final : public Float32Only {
 public:
  explicit CountedCnn(const runner::models::ModelOptions& o) : Float32Only(o, true) {
    if (const char* path = std::getenv("RUNNER_TEST_MODEL_BUILDS"))
      std::ofstream(path, std::ios::app) << "built\n";
  }
};

void register_preflight_plugins(runner::Registries& r) {
  r.losses.add(
      "hard_labels_only",
      [](const nlohmann::json&) -> std::shared_ptr<runner::losses::Loss> {
        return std::make_shared<HardLabelsOnly>();
      },
      runner::schemas::closed_object(nlohmann::json::object(), "No parameters."),
      "cross entropy that claims soft targets and refuses them (a test of the preflight)");
  r.models.add(
      "float32_only",
      [](const nlohmann::json& params) -> std::shared_ptr<runner::models::Model> {
        return std::make_shared<Float32Only>(runner::models::model_options_from(params));
      },
      runner::models::model_params_schema(),
      "conv + pool + fc refusing activations other than float32 (a test of the preflight)");
  r.models.add(
      "counted_cnn",
      [](const nlohmann::json& params) -> std::shared_ptr<runner::models::Model> {
        return std::make_shared<CountedCnn>(runner::models::model_options_from(params));
      },
      runner::models::model_params_schema(),
      "conv + pool + fc counting its builds in $RUNNER_TEST_MODEL_BUILDS (a test of the "
      "preflight)");
}

}  // namespace

RUNNER_PLUGIN(register_preflight_plugins)
