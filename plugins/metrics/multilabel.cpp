// task: multilabel's metrics on sigmoid scores against multi-hot targets [N, C]: `map` (mean
// over classes of average precision, scikit-learn's average_precision_score) and `micro_f1`
// (F1 over every (sample, class) decision at a threshold); macro_f1 takes multi-hot targets too
// (macro_f1.cpp).

#include <algorithm>
#include <numeric>
#include <vector>

#include "metrics/common.hpp"
#include "runner/error.hpp"
#include "runner/metrics/average_precision.hpp"
#include "runner/metrics/metric.hpp"

namespace runner::metrics {

void check_multilabel_inputs(const std::string& metric, const torch::Tensor& logits,
                             const torch::Tensor& targets) {
  if (logits.dim() != 2 || targets.sizes() != logits.sizes() || !targets.is_floating_point())
    throw Error("metric " + metric + ": expected logits [N, C] and multi-hot targets [N, C] " +
                "(task: multilabel), got " + c10::str(logits.sizes()) + " and " +
                c10::str(targets.sizes()));
  if (logits.size(0) == 0)
    throw Error("metric " + metric + ": no samples to evaluate (empty validation split?)");
}

torch::Tensor multilabel_predictions(const torch::Tensor& logits, double threshold) {
  return logits.to(torch::kFloat).sigmoid() >= threshold;
}

namespace {

class MeanAveragePrecision final : public Metric {
 public:
  std::string name() const override { return "map"; }
  double compute(const torch::Tensor& logits, const torch::Tensor& targets) const override {
    check_multilabel_inputs("map", logits, targets);
    const torch::Tensor scores = logits.to(torch::kFloat).t().contiguous();
    const torch::Tensor truth = targets.to(torch::kFloat).t().contiguous();
    const int64_t n = logits.size(0);
    double sum = 0;
    int64_t classes = 0;
    for (int64_t c = 0; c < logits.size(1); ++c) {
      const float* s = scores[c].data_ptr<float>();
      const float* t = truth[c].data_ptr<float>();
      const std::vector<float> score(s, s + n), positive(t, t + n);
      // A class without a positive sample has no recall to average: it is left out.
      if (std::none_of(positive.begin(), positive.end(), [](float v) { return v > 0.5f; }))
        continue;
      sum += average_precision(score, positive);
      ++classes;
    }
    return classes ? sum / static_cast<double>(classes) : 0.0;
  }
};

class MicroF1 final : public Metric {
 public:
  explicit MicroF1(double threshold) : threshold_(threshold) {}
  std::string name() const override { return "micro_f1"; }
  double compute(const torch::Tensor& logits, const torch::Tensor& targets) const override {
    check_multilabel_inputs("micro_f1", logits, targets);
    const torch::Tensor predicted = multilabel_predictions(logits, threshold_);
    const torch::Tensor truth = targets > 0.5;
    const double tp = predicted.logical_and(truth).sum().item<double>();
    const double denominator = predicted.sum().item<double>() + truth.sum().item<double>();
    return denominator > 0 ? 2 * tp / denominator : 0.0;
  }

 private:
  double threshold_;
};

}  // namespace

nlohmann::json threshold_property() {
  return {{"threshold",
           {{"type", "number"},
            {"exclusiveMinimum", 0},
            {"exclusiveMaximum", 1},
            {"default", 0.5},
            {"description",
             "task: multilabel: a class is predicted where its sigmoid probability is at least "
             "this (the single-label argmax has none: refused there)."}}}};
}

void add_multilabel_metrics(Registry<MetricFactory>& registry) {
  registry.add(
      "map",
      [](const nlohmann::json&) -> std::shared_ptr<Metric> {
        return std::make_shared<MeanAveragePrecision>();
      },
      schemas::metric(nlohmann::json::object()),
      "task: multilabel: mean over classes (those with a positive sample) of average precision, "
      "as scikit-learn's average_precision_score(average='macro')");
  registry.add(
      "micro_f1",
      [](const nlohmann::json& params) -> std::shared_ptr<Metric> {
        return std::make_shared<MicroF1>(params.at("threshold").get<double>());
      },
      schemas::metric(threshold_property()),
      "task: multilabel: F1 = 2TP / (2TP + FP + FN) over every (image, class) decision at the "
      "threshold");
}

}  // namespace runner::metrics
