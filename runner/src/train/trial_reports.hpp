#pragma once
// A sweep trial's epochs, judged by the sweep's search (runner sweep, search: optuna): after
// each whole epoch's validation the main process writes the judged value to
// $RUNNER_TRIAL_REPORTS/epoch-<E>.json and waits for the sweep's answer in epoch-<E>.decision
// ("continue", or "prune" and why on the next line); every rank learns it. Waiting keeps the
// pruning exact: a trial stops at the epoch its pruner judged, as Optuna's objective would.
// Without the variable (every run but a sweep's trial) nothing happens.

#include <cstdint>
#include <string>

namespace runner::dist {
class World;
}

namespace runner::train {

/// The variable that names the folder a sweep's trial reports into.
inline constexpr const char* kTrialReportsVar = "RUNNER_TRIAL_REPORTS";

class TrialReports {
 public:
  TrialReports();
  bool active() const { return !folder_.empty(); }
  /// After whole epoch `epoch` (1-based) judged `value`: "" to go on, else why the sweep
  /// prunes the trial. A collective; a stop signal while waiting goes on (the step's flags
  /// then stop the run).
  std::string after_epoch(dist::World& world, int64_t epoch, double value) const;

 private:
  std::string folder_;
};

}  // namespace runner::train
