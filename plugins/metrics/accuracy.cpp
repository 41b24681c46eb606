// `accuracy` and `top_k`: share of samples whose label is the argmax / among the k largest.

#include <algorithm>

#include "metrics/common.hpp"
#include "runner/metrics/metric.hpp"
#include "runner/metrics/metric_names.hpp"

namespace runner::metrics {

namespace {

class TopKAccuracy final : public Metric {
 public:
  TopKAccuracy(std::string name, int64_t k) : name_(std::move(name)), k_(k) {}
  std::string name() const override { return name_; }
  double compute(const torch::Tensor& logits, const torch::Tensor& labels) const override {
    check_metric_inputs(name_, logits, labels);
    // k >= C: every label is among the top C, as torch's topk on all classes would say.
    const int64_t k = std::min(k_, logits.size(1));
    const torch::Tensor top = std::get<1>(logits.topk(k, /*dim=*/1));
    const torch::Tensor hit = top.eq(labels.unsqueeze(1)).any(1);
    return hit.to(torch::kDouble).mean().item<double>();
  }

 private:
  std::string name_;
  int64_t k_;
};

}  // namespace

void add_accuracy_metric(Registry<MetricFactory>& registry) {
  registry.add(
      "accuracy",
      [](const nlohmann::json&) -> std::shared_ptr<Metric> {
        return std::make_shared<TopKAccuracy>("accuracy", 1);
      },
      schemas::metric(nlohmann::json::object()),
      "share of samples whose argmax logit is the label (mode max)");
}

void add_top_k_metric(Registry<MetricFactory>& registry) {
  nlohmann::json properties = {
      {"k",
       {{"type", "integer"},
        {"minimum", 1},
        {"default", 5},
        {"description",
         "Count a sample as right when its label is among its k largest logits; the metric is "
         "named top{k} (e.g. top5)."}}}};
  registry.add(
      "top_k",
      [](const nlohmann::json& params) -> std::shared_ptr<Metric> {
        const int64_t k = params.at("k").get<int64_t>();
        return std::make_shared<TopKAccuracy>(top_k_name(k), k);
      },
      schemas::metric(properties), "share of samples whose label is among the k largest logits");
}

}  // namespace runner::metrics
