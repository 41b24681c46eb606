// `loss`: mean cross-entropy of the gathered validation logits (smaller is better).

#include "metrics/common.hpp"
#include "runner/metrics/metric.hpp"

namespace runner::metrics {

namespace {

class LossMetric final : public Metric {
 public:
  std::string name() const override { return "loss"; }
  std::string mode() const override { return "min"; }
  double compute(const torch::Tensor& logits, const torch::Tensor& labels) const override {
    if (labels.dim() == 2) {  // task: multilabel: binary cross-entropy over every class
      check_multilabel_inputs("loss", logits, labels);
      return torch::nn::functional::binary_cross_entropy_with_logits(logits.to(torch::kFloat),
                                                                     labels.to(torch::kFloat))
          .item<double>();
    }
    check_metric_inputs("loss", logits, labels);
    return torch::nn::functional::cross_entropy(logits.to(torch::kFloat), labels).item<double>();
  }
};

}  // namespace

void add_loss_metric(Registry<MetricFactory>& registry) {
  registry.add(
      "loss",
      [](const nlohmann::json&) -> std::shared_ptr<Metric> {
        return std::make_shared<LossMetric>();
      },
      schemas::metric(nlohmann::json::object()),
      "mean cross-entropy -log softmax(logits)[label], without smoothing or weights (mode min); "
      "task: multilabel: mean binary cross-entropy over every class");
}

}  // namespace runner::metrics
