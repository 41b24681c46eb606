// cross_entropy loss and the metrics on hand-made logits.

#include <cmath>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "plugin_params.hpp"
#include "runner/error.hpp"
#include "runner/losses/loss.hpp"
#include "runner/metrics/metric.hpp"
#include "runner/registries.hpp"

namespace {

std::shared_ptr<runner::losses::Loss> make_loss(nlohmann::json user = nlohmann::json::object()) {
  const auto& entry = runner::registries().losses.at("cross_entropy");
  return entry.factory(runner::test::with_defaults(entry.schema, std::move(user)));
}

std::shared_ptr<runner::metrics::Metric> make_metric(const std::string& name,
                                                     nlohmann::json user = {}) {
  if (user.is_null()) user = nlohmann::json::object();
  const auto& entry = runner::registries().metrics.at(name);
  return entry.factory(runner::test::with_defaults(entry.schema, std::move(user)));
}

TEST(CrossEntropy, EqualLogitsGiveLogOfTheClassCount) {
  auto loss = make_loss();
  EXPECT_NEAR(loss->compute(torch::zeros({3, 4}), torch::tensor({0, 1, 3})).item<double>(),
              std::log(4.0), 1e-6);
}

TEST(CrossEntropy, LabelSmoothingMixesInTheUniformTarget) {
  // logits [2, 0], label 0, eps 0.2, C 2: -(1 - eps) * logp0 - eps / 2 * (logp0 + logp1).
  const double lse = std::log(std::exp(2.0) + 1.0);
  const double logp0 = 2.0 - lse, logp1 = -lse;
  const double expected = -0.8 * logp0 - 0.1 * (logp0 + logp1);
  auto loss = make_loss({{"label_smoothing", 0.2}});
  EXPECT_NEAR(loss->compute(torch::tensor({{2.0f, 0.0f}}), torch::tensor({0})).item<double>(),
              expected, 1e-6);
}

TEST(CrossEntropy, ClassWeightsGiveAWeightedMean) {
  // Sample losses ln2 (label 0, w 1) and ln(1 + e^2) (label 1, w 3): sum(w l) / sum(w).
  auto loss = make_loss({{"weight", {1.0, 3.0}}});
  const auto logits = torch::tensor({{0.0f, 0.0f}, {2.0f, 0.0f}});
  const double expected = (std::log(2.0) + 3 * std::log(1 + std::exp(2.0))) / 4;
  EXPECT_NEAR(loss->compute(logits, torch::tensor({0, 1})).item<double>(), expected, 1e-5);
  EXPECT_THROW(loss->compute(torch::zeros({1, 3}), torch::tensor({0})), runner::ConfigError);
}

TEST(CrossEntropy, HalfPrecisionLogitsAreReducedInFloat32) {
  auto loss = make_loss();
  torch::manual_seed(1);
  const auto logits = torch::randn({64, 10}) * 8;
  const auto labels = torch::randint(10, {64});
  const auto half = loss->compute(logits.to(torch::kHalf), labels);
  EXPECT_EQ(half.scalar_type(), torch::kFloat);
  const auto reference = loss->compute(logits.to(torch::kHalf).to(torch::kFloat), labels);
  EXPECT_NEAR(half.item<double>(), reference.item<double>(), 1e-6);
}

// Four samples, three classes: argmax predictions 0, 1, 1, 2 against labels 0, 1, 2, 2.
const torch::Tensor kLogits =
    torch::tensor({{3.0f, 1.0f, 2.0f}, {0.0f, 2.0f, 1.0f}, {0.1f, 0.5f, 0.4f}, {0.0f, 1.0f, 5.0f}});
const torch::Tensor kLabels = torch::tensor({0, 1, 2, 2});

TEST(Metrics, AccuracyCountsArgmaxHits) {
  auto metric = make_metric("accuracy");
  EXPECT_EQ(metric->name(), "accuracy");
  EXPECT_EQ(metric->mode(), "max");
  EXPECT_DOUBLE_EQ(metric->compute(kLogits, kLabels), 0.75);
}

TEST(Metrics, TopKIsNamedAfterKAndCountsTheKLargest) {
  auto top2 = make_metric("top_k", {{"k", 2}});
  EXPECT_EQ(top2->name(), "top2");
  // Sample 0's label 0 is first; sample 2's label 2 (0.4) is second: all four hit.
  EXPECT_DOUBLE_EQ(top2->compute(kLogits, kLabels), 1.0);
  auto top1 = make_metric("top_k", {{"k", 1}});
  EXPECT_DOUBLE_EQ(top1->compute(kLogits, kLabels), 0.75);
  EXPECT_EQ(make_metric("top_k")->name(), "top5");
  EXPECT_DOUBLE_EQ(make_metric("top_k")->compute(kLogits, kLabels), 1.0);  // k > C
}

TEST(Metrics, MacroF1AveragesPerClassF1) {
  // class 0: TP1 FP0 FN0 -> 1; class 1: TP1 FP1 FN0 -> 2/3; class 2: TP1 FP0 FN1 -> 2/3.
  auto metric = make_metric("macro_f1");
  EXPECT_NEAR(metric->compute(kLogits, kLabels), (1.0 + 2.0 / 3 + 2.0 / 3) / 3, 1e-12);
  // A class absent from labels and predictions is left out (class 3 here).
  const auto wide = torch::cat({kLogits, torch::full({4, 1}, -10.0f)}, 1);
  EXPECT_NEAR(metric->compute(wide, kLabels), (1.0 + 2.0 / 3 + 2.0 / 3) / 3, 1e-12);
}

TEST(Metrics, LossIsMeanCrossEntropyAndSmallerIsBetter) {
  auto metric = make_metric("loss");
  EXPECT_EQ(metric->mode(), "min");
  EXPECT_NEAR(metric->compute(torch::zeros({2, 5}), torch::tensor({1, 4})), std::log(5.0), 1e-6);
}

TEST(Metrics, BadInputsAreErrorsNotGarbage) {
  for (const auto& name : {"accuracy", "top_k", "macro_f1", "loss"}) {
    auto metric = make_metric(name);
    EXPECT_THROW(metric->compute(torch::zeros({0, 3}), torch::zeros({0}, torch::kLong)),
                 runner::Error)
        << name;
    EXPECT_THROW(metric->compute(kLogits, torch::tensor({0, 1, 2, 7})), runner::Error) << name;
  }
}

}  // namespace
