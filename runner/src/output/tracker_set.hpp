#pragma once
// The run's trackers (output.trackers: TensorBoard, MLflow, a plugin's) as one observer of the
// run: each record the loop reports goes to every tracker, and once the run folder's files are
// final (after summary.json and report.html) each tracker is offered them and finishes. A
// tracker that throws is switched off for the run with one warning line: a tracker never
// fails or stops a run. Main process only.

#include <memory>
#include <string>
#include <vector>

#include "output/run_observer.hpp"
#include "runner/trackers/tracker.hpp"

namespace runner::output {

/// One tracker of the run, as output.trackers lists it.
struct TrackerEntry {
  std::string name;      ///< "mlflow"
  std::string key_path;  ///< "output.trackers.1"
  std::unique_ptr<trackers::Tracker> tracker;
};

class TrackerSet : public RunObserver {
 public:
  /// `start` is what every tracker's start() gets (with resumed_at filled in);
  /// `predictions_file` (predict.output) is among the files offered at the end.
  TrackerSet(std::vector<TrackerEntry> entries, trackers::RunStart start,
             std::string predictions_file);

  void on_start(std::optional<int64_t> resumed_at) override;
  void on_window(const WindowRecord& record) override;
  void on_epoch(const EpochRecord& record) override;
  void on_best(const BestRecord& record) override;
  void on_stop(const StopRecord& record) override;
  void on_end(const RunEnd& end) override;
  void on_files_final() override;

  /// The trackers still on (for tests and the end line).
  size_t active() const;

 private:
  void log(trackers::Record record);
  /// Runs `call` for the entry; what it throws switches the entry off, said once.
  template <class Call>
  void guarded(TrackerEntry& entry, const char* what, Call&& call);

  std::vector<TrackerEntry> entries_;
  trackers::RunStart start_;
  std::string predictions_file_;
  std::optional<trackers::RunEnd> end_;
  bool finished_ = false;
};

/// The files of a run folder a tracker is offered at the end, those that exist, relative to it:
/// config.yaml, summary.json, report.html, metrics.jsonl, metrics.csv, batch.png,
/// the predictions file (predict.output) and the checkpoints.
std::vector<std::string> offered_files(const std::string& run_dir,
                                       const std::string& predictions_file);

}  // namespace runner::output
