#include "builtins.hpp"
#include "runner/trackers/tracker.hpp"
#include "trackers/trackers.hpp"

namespace runner {

void register_builtin_trackers(Registry<TrackerFactory>& registry) {
  trackers::register_tensorboard(registry);
  trackers::register_mlflow(registry);
}

}  // namespace runner
