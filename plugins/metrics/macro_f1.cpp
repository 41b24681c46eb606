// `macro_f1`: the unweighted mean of per-class F1 (scikit-learn's f1_score(average="macro")).

#include "metrics/common.hpp"
#include "runner/metrics/metric.hpp"

namespace runner::metrics {

namespace {

class MacroF1 final : public Metric {
 public:
  std::string name() const override { return "macro_f1"; }
  double compute(const torch::Tensor& logits, const torch::Tensor& labels) const override {
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
};

}  // namespace

void add_macro_f1_metric(Registry<MetricFactory>& registry) {
  registry.add(
      "macro_f1",
      [](const nlohmann::json&) -> std::shared_ptr<Metric> { return std::make_shared<MacroF1>(); },
      schemas::metric(nlohmann::json::object()),
      "mean over classes of F1 = 2TP / (2TP + FP + FN), classes seen in labels or predictions");
}

}  // namespace runner::metrics
