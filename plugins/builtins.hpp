#pragma once
// One registration function per built-in plugin folder.

#include "runner/registries.hpp"

namespace runner {

void register_builtin_datasets(Registry<DatasetFactory>& registry);
void register_builtin_transforms(Registry<TransformFactory>& registry);
void register_builtin_models(Registry<ModelFactory>& registry);
void register_builtin_optimizers(Registry<OptimizerFactory>& registry);
void register_builtin_schedulers(Registry<SchedulerFactory>& registry);
void register_builtin_losses(Registry<LossFactory>& registry);
void register_builtin_metrics(Registry<MetricFactory>& registry);
void register_builtin_trackers(Registry<TrackerFactory>& registry);

}  // namespace runner
