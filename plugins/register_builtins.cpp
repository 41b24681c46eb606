#include "builtins.hpp"

namespace runner {

void register_builtin_plugins(Registries& r) {
  static bool done = false;  // idempotent: tests and the CLI may both call it
  if (done) return;
  done = true;
  register_builtin_datasets(r.datasets);
  register_builtin_transforms(r.transforms);
  register_builtin_models(r.models);
  register_builtin_optimizers(r.optimizers);
  register_builtin_schedulers(r.schedulers);
  register_builtin_losses(r.losses);
  register_builtin_metrics(r.metrics);
  register_builtin_trackers(r.trackers);
}

}  // namespace runner
