#pragma once
// `runner run --dry-run`: everything but training.

#include <ostream>

#include "config/experiment.hpp"
#include "run/run_options.hpp"

namespace runner::run {

/// Makes every check a run makes before training (run/preflight: devices, the run folder; the
/// data fits the model), resolves every plugin, builds the datasets, transforms and model,
/// pushes one training sample through the transforms, and prints a summary (world, batch
/// sizes, dataset sizes, parameters). Throws what the checks and building throw.
void dry_run(const config::Experiment& e, const RunOptions& options, std::ostream& out);

}  // namespace runner::run
