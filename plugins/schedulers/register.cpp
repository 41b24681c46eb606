#include "builtins.hpp"
#include "schedulers/warmup.hpp"

namespace runner {

void register_builtin_schedulers(Registry<SchedulerFactory>& registry) {
  schedulers::add_none_scheduler(registry);
  schedulers::add_step_scheduler(registry);
  schedulers::add_cosine_scheduler(registry);
  schedulers::add_onecycle_scheduler(registry);
}

}  // namespace runner
