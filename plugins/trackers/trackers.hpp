#pragma once
// The built-in trackers, one registration function per file.

#include "runner/registries.hpp"

namespace runner::trackers {

void register_tensorboard(Registry<TrackerFactory>& registry);
void register_mlflow(Registry<TrackerFactory>& registry);

}  // namespace runner::trackers
