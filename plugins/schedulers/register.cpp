#include "builtins.hpp"
#include "schedulers/schedulers.hpp"

namespace runner {

void register_builtin_schedulers(Registry<SchedulerFactory>& registry) {
  optim::add_none_scheduler(registry);
  optim::add_step_scheduler(registry);
  optim::add_cosine_scheduler(registry);
  optim::add_onecycle_scheduler(registry);
}

}  // namespace runner
