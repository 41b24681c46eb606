#pragma once
// The built-in schedulers' registration functions. What they share (the warmup and its schema)
// is public: runner/optim/warmup_scheduler.hpp and runner/plugin_schemas.hpp.

#include "runner/optim/warmup_scheduler.hpp"
#include "runner/plugin_schemas.hpp"
#include "runner/registries.hpp"

namespace runner::optim {

void add_none_scheduler(Registry<SchedulerFactory>& registry);
void add_step_scheduler(Registry<SchedulerFactory>& registry);
void add_cosine_scheduler(Registry<SchedulerFactory>& registry);
void add_onecycle_scheduler(Registry<SchedulerFactory>& registry);

}  // namespace runner::optim
