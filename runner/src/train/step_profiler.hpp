#pragma once
// train.profile: records a window of optimizer steps with PyTorch's profiler (Kineto, through
// libtorch's torch::autograd::profiler) on the main process, each step inside a ProfilerStep#N
// span as torch.profiler's schedule marks them, and reports the window to the run's observer
// (output::ProfileReport: the summary and the Chrome trace). Ranks other than the main one, and
// runs without train.profile, do nothing here.

#include <cstdint>
#include <memory>

#include <torch/torch.h>

#include "config/experiment_options.hpp"
#include "output/run_observer.hpp"

namespace at {
class RecordFunction;
}

namespace runner::train {

class StepProfiler {
 public:
  /// Records on `device`'s activity (and the host's) when `options.enabled` and `main`.
  StepProfiler(const config::ProfileOptions& options, bool main, const c10::Device& device,
               output::RunObserver& observer);
  /// Stops a recording still running (a failed run) without reporting it.
  ~StepProfiler();
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;

  /// Optimizer step `step` (1-based, of the run) begins: its first batch is in hand. Starts the
  /// recording once this process has taken skip_steps steps.
  void step_begins(int64_t step);
  /// The step begun last ended; the recording stops and is reported after `steps` steps.
  void step_ends();
  /// The run's training ends: a window cut short by the run's end is reported with the steps it
  /// holds (none: nothing is reported).
  void finish();

 private:
  void start();
  void stop_and_report();

  config::ProfileOptions options_;
  bool active_ = false;  ///< this process records (train.profile on the main process)
  c10::Device device_;
  output::RunObserver& observer_;
  int64_t steps_seen_ = 0;      ///< steps this process ended
  int64_t steps_recorded_ = 0;  ///< steps ended inside the recording
  bool recording_ = false, done_ = false;
  std::unique_ptr<at::RecordFunction> step_span_;
};

}  // namespace runner::train
