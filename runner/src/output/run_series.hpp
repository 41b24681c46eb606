#pragma once
// Every number a run's metrics.jsonl records, as series for the pages' charts: each field of the
// per-step records ("loss", "lr", "images_per_s", ...) against the optimizer step, and each
// field of the per-epoch records ("val_accuracy", "ema_val_loss", "epoch_seconds", ...) against
// the epoch (and the step the epoch ended at). Torch-free.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace runner::output {

struct MetricSeries {
  std::string key;                         ///< the records' field
  bool per_epoch = false;                  ///< from the epoch records, else from the step records
  std::vector<double> step, epoch, value;  ///< value NaN where the record held null

  /// The series' name across runs: "val_accuracy" per epoch, "step:loss" per step.
  std::string id() const { return per_epoch ? key : "step:" + key; }
  /// In a person's words: "training loss (per step)", "EMA validation accuracy", ...
  std::string title() const;
};

struct RunSeries {
  std::vector<MetricSeries> series;  ///< per-step series first, each in first-seen order
  nlohmann::json best;               ///< the last "best" record; null when there is none

  /// The series of that id; null when the run has none.
  const MetricSeries* find(const std::string& id) const;
};

/// The series of `run_dir`/metrics.jsonl. A series longer than `max_points` (a long run's
/// per-step fields) is thinned to means of consecutive points, at most `max_points` of them.
RunSeries read_run_series(const std::filesystem::path& run_dir, size_t max_points = 4000);

/// The chart a series belongs on, by the pages' rule: "loss" (training and validation losses),
/// "metric:<name>" (a validation metric and its EMA), or the series' own id.
std::string chart_of(const MetricSeries& series);

/// The format its numbers take on a page: "si" (throughput, memory) or "number".
std::string format_of(const MetricSeries& series);

}  // namespace runner::output
