#pragma once
// Which epoch's weights are the best so far (train.best: the metric and its direction), and
// when training stops early (train.early_stopping: patience and min_delta).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/experiment_options.hpp"

namespace runner::metrics {
class Metric;
}

namespace runner::train {

/// train.best.mode resolved: "max" or "min"; auto takes the metric's own mode (a configured
/// metric's mode(), "min" for the loss).
std::string resolve_best_mode(const config::BestOptions& best,
                              const std::vector<std::shared_ptr<metrics::Metric>>& metrics);

class BestTracker {
 public:
  /// `mode`: "max" or "min".
  BestTracker(std::string metric, std::string mode, config::EarlyStoppingOptions early_stopping);

  /// Whether `value` beats the best so far by more than min_delta (any value beats none).
  bool improves(double value) const;
  /// Records the value of the whole epoch `epoch` (1-based); returns whether it is the new best.
  bool record(int64_t epoch, double value);
  /// Whether train.early_stopping.patience epochs in a row brought no improvement (never with
  /// patience 0).
  bool patience_exhausted() const;

  const std::string& metric() const { return metric_; }
  const std::string& mode() const { return mode_; }
  std::optional<double> value() const { return value_; }
  int64_t epoch() const { return epoch_; }  ///< of the best value; -1 before one
  int64_t patience() const { return early_stopping_.patience; }

  /// The checkpoint's keys of the tracker, and reading them back.
  nlohmann::json to_json() const;
  void load_json(const nlohmann::json& meta);

 private:
  std::string metric_, mode_;
  config::EarlyStoppingOptions early_stopping_;
  std::optional<double> value_;
  int64_t epoch_ = -1, epochs_without_improvement_ = 0;
};

}  // namespace runner::train
