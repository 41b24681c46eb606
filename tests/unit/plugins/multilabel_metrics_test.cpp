// task: multilabel's loss and metrics on hand-made logits: bce (pos_weight), map, micro_f1 and
// macro_f1 at their threshold.

#include <cmath>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "plugin_params.hpp"
#include "runner/error.hpp"
#include "runner/losses/loss.hpp"
#include "runner/metrics/metric.hpp"
#include "runner/registries.hpp"

namespace {

template <class Kind>
auto make(const Kind& registry, const std::string& name, nlohmann::json user = {}) {
  if (user.is_null()) user = nlohmann::json::object();
  const auto& entry = registry.at(name);
  return entry.factory(runner::test::with_defaults(entry.schema, std::move(user)));
}

double sigmoid_logit(double p) { return std::log(p / (1 - p)); }

// 4 images x 2 classes: probabilities and their multi-hot targets.
torch::Tensor logits_of(const std::vector<std::vector<double>>& probabilities) {
  std::vector<float> flat;
  for (const auto& row : probabilities)
    for (double p : row) flat.push_back(static_cast<float>(sigmoid_logit(p)));
  return torch::tensor(flat).reshape({static_cast<int64_t>(probabilities.size()), -1});
}

const std::vector<std::vector<double>> kProbabilities = {
    {0.9, 0.2}, {0.6, 0.7}, {0.4, 0.3}, {0.2, 0.8}};
const torch::Tensor kTargets =
    torch::tensor({1.0f, 0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f, 1.0f}).reshape({4, 2});

TEST(Bce, PosWeightScalesThePositiveTerms) {
  const auto& losses = runner::registries().losses;
  const torch::Tensor logits = torch::tensor({{0.5f, -1.0f}});
  const torch::Tensor target = torch::tensor({{1.0f, 0.0f}});
  const auto softplus = [](double x) { return std::log1p(std::exp(x)); };
  // -log sigmoid(x) = softplus(-x); -log(1 - sigmoid(x)) = softplus(x).
  const double plain = (softplus(-0.5) + softplus(-1.0)) / 2;
  const double weighted = (3 * softplus(-0.5) + softplus(-1.0)) / 2;
  EXPECT_NEAR(make(losses, "bce")->compute(logits, target).item<double>(), plain, 1e-6);
  EXPECT_NEAR(
      make(losses, "bce", {{"pos_weight", {3.0, 1.0}}})->compute(logits, target).item<double>(),
      weighted, 1e-6);
  // Class indices are one-hot targets (timm's BinaryCrossEntropy on single-label data).
  EXPECT_NEAR(make(losses, "bce")->compute(logits, torch::tensor({0})).item<double>(), plain, 1e-6);
  EXPECT_THROW(make(losses, "bce", {{"pos_weight", {1.0}}})->compute(logits, target),
               runner::ConfigError);
}

TEST(MultilabelMetrics, MeanAveragePrecisionByHand) {
  // Class 0: scores 0.9+, 0.6-, 0.4+, 0.2-: AP = 1/2 x 1/1 + 1/2 x 2/3 = 5/6.
  // Class 1: scores 0.8+, 0.7+, 0.3-, 0.2-: AP = 1.
  const auto map = make(runner::registries().metrics, "map");
  EXPECT_NEAR(map->compute(logits_of(kProbabilities), kTargets), (5.0 / 6.0 + 1.0) / 2, 1e-6);
}

TEST(MultilabelMetrics, F1AtTheThreshold) {
  const auto& metrics = runner::registries().metrics;
  const torch::Tensor logits = logits_of(kProbabilities);
  // At 0.5: predicted (0.9, 0.6 | 0.7, 0.8): class 0 TP 1 FP 1 FN 1, class 1 TP 2.
  EXPECT_NEAR(make(metrics, "micro_f1")->compute(logits, kTargets), 2.0 * 3 / (4 + 4), 1e-6);
  EXPECT_NEAR(make(metrics, "macro_f1")->compute(logits, kTargets), (0.5 + 1.0) / 2, 1e-6);
  // At 0.35: class 0 also predicts 0.4 (TP): TP 2 FP 1; class 1 TP 2.
  EXPECT_NEAR(make(metrics, "micro_f1", {{"threshold", 0.35}})->compute(logits, kTargets),
              2.0 * 4 / (5 + 4), 1e-6);
  EXPECT_NEAR(make(metrics, "macro_f1", {{"threshold", 0.35}})->compute(logits, kTargets),
              (2.0 * 2 / (3 + 2) + 1.0) / 2, 1e-6);
}

}  // namespace
