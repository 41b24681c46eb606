// `macro_f1`: the unweighted mean of per-class F1 (scikit-learn's f1_score(average="macro")).

#include "metrics/common.hpp"
#include "runner/metrics/metric.hpp"

namespace runner::metrics {

namespace {

class MacroF1 final : public Metric {
 public:
  explicit MacroF1(double threshold) : threshold_(threshold) {}
  std::string name() const override { return "macro_f1"; }
  double compute(const torch::Tensor& logits, const torch::Tensor& labels) const override {
    if (labels.dim() == 2) return multilabel(logits, labels);
    check_metric_inputs("macro_f1", logits, labels);
    const int64_t classes = logits.size(1);
    const torch::Tensor predicted = logits.argmax(1);
    const torch::Tensor right = predicted.eq(labels);
    const torch::Tensor tp = labels.masked_select(right).bincount({}, classes).to(torch::kDouble);
    const torch::Tensor support = labels.bincount({}, classes).to(torch::kDouble);
    const torch::Tensor predicted_count = predicted.bincount({}, classes).to(torch::kDouble);
    // F1 = 2 TP / (2 TP + FP + FN) = 2 TP / (predicted + support); classes that are neither
    // labels nor predictions are left out, as scikit-learn does.
    const torch::Tensor present = (support + predicted_count) > 0;
    const torch::Tensor f1 =
        (2 * tp / (support + predicted_count).clamp_min(1)).masked_select(present);
    return f1.mean().item<double>();
  }

 private:
  // task: multilabel: each class's F1 over the images at the threshold, the same classes kept.
  double multilabel(const torch::Tensor& logits, const torch::Tensor& targets) const {
    check_multilabel_inputs("macro_f1", logits, targets);
    const torch::Tensor predicted = multilabel_predictions(logits, threshold_);
    const torch::Tensor truth = targets > 0.5;
    const torch::Tensor tp = predicted.logical_and(truth).sum(0).to(torch::kDouble);
    const torch::Tensor count =
        (predicted.sum(0) + truth.sum(0)).to(torch::kDouble);  // 2TP + FP + FN
    const torch::Tensor present = count > 0;
    if (!present.any().item<bool>()) return 0.0;
    return (2 * tp / count.clamp_min(1)).masked_select(present).mean().item<double>();
  }

  double threshold_;
};

}  // namespace

void add_macro_f1_metric(Registry<MetricFactory>& registry) {
  registry.add(
      "macro_f1",
      [](const nlohmann::json& params) -> std::shared_ptr<Metric> {
        return std::make_shared<MacroF1>(params.at("threshold").get<double>());
      },
      schemas::metric(threshold_property()),
      "mean over classes of F1 = 2TP / (2TP + FP + FN), classes seen in labels or predictions");
}

}  // namespace runner::metrics
