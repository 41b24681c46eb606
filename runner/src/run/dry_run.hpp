#pragma once
// `runner run --dry-run`: everything but training.

#include <ostream>

#include "config/experiment.hpp"

namespace runner::run {

/// Resolves every plugin, builds the datasets, transforms and model, pushes one training sample
/// through the transforms, and prints a summary (world, batch sizes, dataset sizes,
/// parameters). Throws what building throws.
void dry_run(const config::Experiment& e, std::ostream& out);

}  // namespace runner::run
