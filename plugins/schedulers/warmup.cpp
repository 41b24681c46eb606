#include "schedulers/warmup.hpp"

#include <algorithm>
#include <string>

#include "runner/error.hpp"

namespace runner::optim {

int64_t fitted_warmup_steps(const nlohmann::json& params, const optim::ScheduleContext& context) {
  const int64_t warmup = params.at("warmup_steps").get<int64_t>();
  if (warmup < context.total_steps) return warmup;
  return std::max<int64_t>(0, context.total_steps - 1);
}

WarmupScheduler::WarmupScheduler(const nlohmann::json& params,
                                 const optim::ScheduleContext& context)
    : warmup_steps_(fitted_warmup_steps(params, context)),
      warmup_start_factor_(params.at("warmup_start_factor").get<double>()) {
  const int64_t asked = params.at("warmup_steps").get<int64_t>();
  if (asked != warmup_steps_)
    adjustment_ = "scheduler.warmup_steps " + std::to_string(asked) +
                  " is not shorter than this run's " + std::to_string(context.total_steps) +
                  " optimizer steps: clipped to " + std::to_string(warmup_steps_);
}

double WarmupScheduler::lr_at(int64_t step) const {
  if (step < 0) step = 0;
  if (step >= warmup_steps_) return lr_after(step - warmup_steps_);
  const double fraction = static_cast<double>(step) / static_cast<double>(warmup_steps_);
  return lr_after(0) * (warmup_start_factor_ + (1.0 - warmup_start_factor_) * fraction);
}

nlohmann::json scheduler_schema(const nlohmann::json& properties) {
  nlohmann::json all = {
      {"warmup_steps",
       {{"type", "integer"},
        {"minimum", 0},
        {"default", 0},
        {"description",
         "Optimizer steps of linear warmup before the schedule: at step k < warmup_steps, "
         "lr = lr0 * (warmup_start_factor + (1 - warmup_start_factor) * k / warmup_steps), "
         "lr0 being the schedule's first lr; the schedule then runs over the remaining steps."}}},
      {"warmup_start_factor",
       {{"type", "number"},
        {"minimum", 0},
        {"maximum", 1},
        {"default", 0.0},
        {"description", "Warmup's first lr as a fraction of lr0 (torch LinearLR start_factor)."}}}};
  for (auto it = properties.begin(); it != properties.end(); ++it) all[it.key()] = it.value();
  return {{"type", "object"}, {"additionalProperties", false}, {"properties", all}};
}

int64_t steps_after_warmup(const char* scheduler, const nlohmann::json& params,
                           const optim::ScheduleContext& context) {
  const int64_t warmup = fitted_warmup_steps(params, context);
  const int64_t rest = context.total_steps - warmup;
  if (rest <= 0) {
    throw ConfigError("scheduler." + std::string(scheduler) + ": warmup_steps (" +
                      std::to_string(warmup) + ") leaves no step of the run's " +
                      std::to_string(context.total_steps) +
                      " optimizer steps: lower warmup_steps or train longer");
  }
  return rest;
}

}  // namespace runner::optim
