#include "train/best_tracker.hpp"

#include "runner/metrics/metric.hpp"

namespace runner::train {

using nlohmann::json;

std::string resolve_best_mode(const config::BestOptions& best,
                              const std::vector<std::shared_ptr<metrics::Metric>>& metrics) {
  if (best.mode != "auto") return best.mode;
  std::string mode = best.metric == "loss" ? "min" : "max";
  for (const auto& m : metrics)
    if (m->name() == best.metric) mode = m->mode();
  return mode;
}

BestTracker::BestTracker(std::string metric, std::string mode,
                         config::EarlyStoppingOptions early_stopping)
    : metric_(std::move(metric)), mode_(std::move(mode)), early_stopping_(early_stopping) {}

bool BestTracker::improves(double value) const {
  if (!value_) return true;
  return mode_ == "max" ? value > *value_ + early_stopping_.min_delta
                        : value < *value_ - early_stopping_.min_delta;
}

bool BestTracker::record(int64_t epoch, double value) {
  if (!improves(value)) {
    ++epochs_without_improvement_;
    return false;
  }
  value_ = value;
  epoch_ = epoch;
  epochs_without_improvement_ = 0;
  return true;
}

bool BestTracker::patience_exhausted() const {
  return early_stopping_.patience > 0 && epochs_without_improvement_ >= early_stopping_.patience;
}

json BestTracker::to_json() const {
  return {{"best_value", value_ ? json(*value_) : json(nullptr)},
          {"best_metric", metric_},
          {"best_epoch", epoch_},
          {"epochs_without_improvement", epochs_without_improvement_}};
}

void BestTracker::load_json(const json& meta) {
  value_.reset();
  if (!meta.at("best_value").is_null()) value_ = meta.at("best_value").get<double>();
  epoch_ = meta.at("best_epoch").get<int64_t>();
  epochs_without_improvement_ = meta.at("epochs_without_improvement").get<int64_t>();
}

}  // namespace runner::train
