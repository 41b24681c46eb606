#pragma once
// What a scheduler plugin provides: the learning rate as a pure function of the optimizer
// step, so resuming needs only the step count.

#include <cstdint>
#include <string>

namespace runner::optim {

/// What a scheduler factory knows about the run.
struct ScheduleContext {
  double base_lr = 0.0;         ///< the optimizer's lr (its first parameter group's)
  int64_t total_steps = 0;      ///< optimizer steps in the whole run
  int64_t steps_per_epoch = 0;  ///< optimizer steps per epoch
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  /// Learning rate for optimizer step `step` (0-based; steps skipped by the loss scaler do not
  /// count).
  virtual double lr_at(int64_t step) const = 0;
  /// What the scheduler changed of its parameters to fit this run (e.g. a warmup longer than the
  /// run, clipped), for the engine to say once; empty when nothing.
  virtual std::string adjustment() const { return {}; }
};

}  // namespace runner::optim
