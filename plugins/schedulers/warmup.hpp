#pragma once
// What every built-in scheduler shares: an optional linear warmup in front of its own schedule,
// and the schema properties that configure it.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "runner/optim/scheduler.hpp"
#include "runner/registries.hpp"

namespace runner::optim {

/// Linear warmup, then the subclass's schedule over the remaining steps. During step
/// k < warmup_steps: lr = lr_after(0) * (f + (1 - f) * k / warmup_steps), f =
/// warmup_start_factor (torch's LinearLR chained by SequentialLR); from step W on:
/// lr_after(k - W).
class WarmupScheduler : public optim::Scheduler {
 public:
  /// Reads warmup_steps and warmup_start_factor from the validated `params`. Users shorten runs
  /// all the time (data.limit, epochs): a warmup not shorter than the run's steps is clipped to
  /// leave one step of the schedule itself, and adjustment() says so.
  WarmupScheduler(const nlohmann::json& params, const optim::ScheduleContext& context);
  double lr_at(int64_t step) const final;
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

/// A scheduler schema: the warmup properties plus `properties`, closed to unknown keys.
nlohmann::json scheduler_schema(const nlohmann::json& properties);

/// The warmup a run of `context.total_steps` gets: warmup_steps, clipped to leave one step.
int64_t fitted_warmup_steps(const nlohmann::json& params, const optim::ScheduleContext& context);

/// Steps after the (fitted) warmup in a run of `context.total_steps`; throws ConfigError naming
/// `scheduler` when the run has no step at all.
int64_t steps_after_warmup(const char* scheduler, const nlohmann::json& params,
                           const optim::ScheduleContext& context);

void add_none_scheduler(Registry<SchedulerFactory>& registry);
void add_step_scheduler(Registry<SchedulerFactory>& registry);
void add_cosine_scheduler(Registry<SchedulerFactory>& registry);
void add_onecycle_scheduler(Registry<SchedulerFactory>& registry);

}  // namespace runner::optim
