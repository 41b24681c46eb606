#pragma once
// The lines a run starts with on the console (main process): who runs it and how, the batch
// (per process x processes x accumulation = global), the model and the data.

#include <string>

#include "config/experiment_options.hpp"
#include "run/rank_setup.hpp"
#include "run/run_options.hpp"
#include "train/run_parts.hpp"

namespace runner::run {

/// Logs the banner of a training run in `run_dir`, or of a prediction (options.predict_only).
/// Main process only; other ranks log nothing.
void log_run_banner(const RankSetup& setup, const config::ExperimentOptions& experiment,
                    const train::RunParts& parts, const RunOptions& options,
                    const std::string& run_dir);

}  // namespace runner::run
