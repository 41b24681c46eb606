#pragma once
// The run's records as it trains, from the loop's reports: metrics.jsonl and metrics.csv (a
// record per log window, epoch and best epoch), best_examples.json, (drawn from
// metrics.jsonl) and report.html. During a run it is the only writer of each. Main process
// only. TensorBoard and the other trackers take the same records (output/tracker_set).

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "output/metrics_writer.hpp"
#include "output/run_observer.hpp"

namespace runner::output {

struct RecorderOptions {
  std::vector<std::string> metric_names;   ///< the configured metrics: metrics.csv's columns
  std::vector<std::string> extra_columns;  ///< metrics.csv's columns after the metrics'
};

class RunRecorder : public RunObserver {
 public:
  /// Opens the metrics files in `run_dir` (appending: a resumed run continues them).
  RunRecorder(std::filesystem::path run_dir, RecorderOptions options);

  void on_start(std::optional<int64_t> resumed_at) override;
  void on_window(const WindowRecord& record) override;
  /// The epoch record; report.html ("running: epoch k of n done") again. Every
  /// writer throws runner::Error (util::write_failure) for a file it cannot write.
  void on_epoch(const EpochRecord& record) override;
  void on_best(const BestRecord& record) override;
  /// train.profile: profile/trace.json and profile/summary.md, each written whole.
  void on_profile(const ProfileReport& report) override;
  /// report.html with how the run ended, as summary.json (written first) says.
  void on_stop(const StopRecord& record) override;
  void on_end(const RunEnd& end) override;

 private:
  void write_report(const std::string& status) const;

  std::filesystem::path run_dir_;
  RecorderOptions options_;
  MetricsWriter metrics_;
  std::string running_status_ = "running";  ///< the report's badge while the run trains
};

/// A log window's values as metrics.jsonl and the trackers record them.
nlohmann::json window_values(const WindowRecord& record);
/// An epoch's values as metrics.jsonl and the trackers record them (validation as val_<m>).
nlohmann::json epoch_values(const EpochRecord& record);

}  // namespace runner::output
