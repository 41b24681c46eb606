#pragma once
// Everything a run needs that can be known before a rank starts, checked in one place for
// `validate`, `run --dry-run`, runner's launcher (before it starts ranks) and a process that
// runs alone or was started by another launcher (before it writes anything): the data fits the
// model (shape_checks), the keys fit each other (cross_key_checks) and one real training step
// runs (one_step_check). A failure is one ConfigError line; warnings are returned.

#include <string>
#include <vector>

#include "config/experiment.hpp"
#include "run/run_options.hpp"
#include "train/run_parts.hpp"

namespace runner::run {

/// The checks on parts already built (by the process that then runs them). `world_size`: the
/// processes that train.
std::vector<std::string> check_run_starts(const config::Experiment& e, const train::RunParts& parts,
                                          const RunOptions& options, int world_size);

/// The same, building the parts of `e` first, quietly (only warnings are logged), with the
/// world the experiment's launch section asks for.
std::vector<std::string> check_run_starts(const config::Experiment& e, const RunOptions& options);

}  // namespace runner::run
