#pragma once
// The tracker plugin kind: where a run's records go besides its own folder (TensorBoard's event
// files, an MLflow server, a team's own service), as Accelerate's init_trackers. The run's
// observer calls every tracker the experiment lists in output.trackers, in order, on the main
// process only. A tracker never fails a run: what it throws switches it off for the run with
// one warning line.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace runner::trackers {

/// What a tracker learns when a run starts, or a stopped run starts again (a resume).
struct RunStart {
  std::string run_dir;     ///< the run folder, absolute
  std::string experiment;  ///< the experiment's `name`
  std::string run_name;    ///< the run folder's name ("2026-12-03_10-40-12", a sweep point's id)
  /// The resolved config flattened to dotted keys ("train.batch_size" -> "128"; lists and
  /// objects inside plugin lists as JSON text).
  std::map<std::string, std::string> params;
  /// The environment: runner.version, runner.world_size, runner.device, runner.precision,
  /// runner.host, runner.run_dir, and runner.sweep / sweep.<key> for a sweep's point.
  std::map<std::string, std::string> tags;
  /// Set on a resume: the optimizer step of the checkpoint it continues from. Records after it
  /// come again (equal ones, as the resumed run trains the same steps).
  std::optional<int64_t> resumed_at;
};

/// One record of the run, as metrics.jsonl has it: kind "step" (a log window: loss, lr, scale,
/// images_per_s, data_wait, peak_rss_mib), "epoch" (an epoch: loss, images_per_s,
/// epoch_seconds, val_<metric>, ema_val_<metric>, ...) or "best" (a new best epoch: metric,
/// value, epoch and the report's confusion summary).
struct Record {
  std::string kind;
  int64_t step = 0;     ///< optimizer steps taken
  int64_t epoch = 0;    ///< 1-based
  int64_t unix_ms = 0;  ///< when the run recorded it
  nlohmann::json values = nlohmann::json::object();
};

/// How the run ended.
struct RunEnd {
  std::string status;  ///< "finished", "interrupted", "requeued" (SLURM continues it), "failed"
  std::string reason;  ///< the signal ("SIGTERM") or the error; empty when finished
};

/// What the run offers its trackers.
struct TrackerContext {
  std::string run_dir;     ///< the run folder, absolute
  std::string experiment;  ///< the experiment's `name`
  std::string name;        ///< the tracker's name in output.trackers
  std::string key_path;    ///< "output.trackers.1", for messages
  /// What this tracker saved for the run before (a resumed run, `runner track`), else {}.
  nlohmann::json saved = nlohmann::json::object();
  /// Keeps `state` with the run folder (run.json) for `saved` of a later segment of the run.
  /// Empty in `runner validate`.
  std::function<void(const nlohmann::json& state)> save_state;
};

/// Usage: start, then log (any number), then artifact for each file of the run folder the run
/// offers once its files are final, then finish. Calls come from one thread.
class Tracker {
 public:
  virtual ~Tracker() = default;
  virtual void start(const RunStart& run) = 0;
  virtual void log(const Record& record) = 0;
  /// A file of the run folder, `relative_path` from it (config.yaml, summary.json, report.html,
  /// metrics.jsonl, checkpoints/best.pt, ...); a tracker takes the ones it wants.
  virtual void artifact(const std::string& relative_path) { (void)relative_path; }
  virtual void finish(const RunEnd& end) = 0;
  /// For `runner validate` and --dry-run: throws runner::Error for settings that the service
  /// refuses (the run would track nothing: exit 2); returns warnings for what it cannot tell
  /// now (a server that does not answer).
  virtual std::vector<std::string> check() { return {}; }
  /// For `runner track`: sends what a run could not (RUN/trackers/<name>.pending.jsonl, written
  /// by the tracker itself). Returns what is still not sent ("" when all of it went).
  virtual std::string send_pending() { return ""; }
};

}  // namespace runner::trackers
