#include "builtins.hpp"

namespace runner {

void register_builtin_schedulers(Registry<SchedulerFactory>& registry) { (void)registry; }

}  // namespace runner
