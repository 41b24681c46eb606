#pragma once
// The linear warmup every built-in scheduler has in front of its own schedule (the `scheduler`
// schema of runner/plugin_schemas.hpp configures it), for out-of-tree schedulers too.
// Header-only.

#include <algorithm>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "runner/error.hpp"
#include "runner/optim/scheduler.hpp"

namespace runner::optim {

/// The warmup a run of `context.total_steps` gets: warmup_steps, clipped to leave one step.
inline int64_t fitted_warmup_steps(const nlohmann::json& params, const ScheduleContext& context) {
  const int64_t warmup = params.at("warmup_steps").get<int64_t>();
  if (warmup < context.total_steps) return warmup;
  return std::max<int64_t>(0, context.total_steps - 1);
}

/// Steps after the (fitted) warmup in a run of `context.total_steps`; throws ConfigError naming
/// `scheduler` when the run has no step at all.
inline int64_t steps_after_warmup(const char* scheduler, const nlohmann::json& params,
                                  const ScheduleContext& context) {
  const int64_t warmup = fitted_warmup_steps(params, context);
  const int64_t rest = context.total_steps - warmup;
  if (rest <= 0)
    throw ConfigError("scheduler." + std::string(scheduler) + ": warmup_steps (" +
                      std::to_string(warmup) + ") leaves no step of the run's " +
                      std::to_string(context.total_steps) +
                      " optimizer steps: lower warmup_steps or train longer");
  return rest;
}

/// Linear warmup, then the subclass's schedule over the remaining steps. During step
/// k < warmup_steps: lr = lr_after(0) * (f + (1 - f) * k / warmup_steps), f =
/// warmup_start_factor (torch's LinearLR chained by SequentialLR); from step W on:
/// lr_after(k - W).
class WarmupScheduler : public Scheduler {
 public:
  /// Reads warmup_steps and warmup_start_factor from the validated `params`. Users shorten runs
  /// all the time (data.limit, epochs): a warmup not shorter than the run's steps is clipped to
  /// leave one step of the schedule itself, and adjustment() says so.
  WarmupScheduler(const nlohmann::json& params, const ScheduleContext& context)
      : warmup_steps_(fitted_warmup_steps(params, context)),
        warmup_start_factor_(params.at("warmup_start_factor").get<double>()) {
    const int64_t asked = params.at("warmup_steps").get<int64_t>();
    if (asked != warmup_steps_)
      adjustment_ = "scheduler.warmup_steps " + std::to_string(asked) +
                    " is not shorter than this run's " + std::to_string(context.total_steps) +
                    " optimizer steps: clipped to " + std::to_string(warmup_steps_);
  }

  double lr_at(int64_t step) const final {
    if (step < 0) step = 0;
    if (step >= warmup_steps_) return lr_after(step - warmup_steps_);
    const double fraction = static_cast<double>(step) / static_cast<double>(warmup_steps_);
    return lr_after(0) * (warmup_start_factor_ + (1.0 - warmup_start_factor_) * fraction);
  }
  std::string adjustment() const final { return adjustment_; }

 protected:
  /// The schedule proper for step `step` counted from the end of the warmup (>= 0).
  virtual double lr_after(int64_t step) const = 0;
  int64_t warmup_steps() const { return warmup_steps_; }

 private:
  int64_t warmup_steps_;
  double warmup_start_factor_;
  std::string adjustment_;
};

}  // namespace runner::optim
