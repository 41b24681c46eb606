#pragma once
// One rank's whole run: join the world, build the run's parts, make the run folder, then train
// (keeping the best weights and predicting) or only predict. `runner run` and `runner predict`
// call it in every rank process.

#include "config/experiment.hpp"
#include "run/run_options.hpp"

namespace runner::run {

/// Runs the experiment on this rank; returns the exit code. Errors are thrown (and written to
/// this rank's log file).
int run_experiment(const config::Experiment& e, const RunOptions& options);

}  // namespace runner::run
