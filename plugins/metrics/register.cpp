#include "builtins.hpp"

namespace runner {

void register_builtin_metrics(Registry<MetricFactory>& registry) { (void)registry; }

}  // namespace runner
