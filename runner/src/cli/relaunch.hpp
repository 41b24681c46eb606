#pragma once
// launch.max_restarts: runner's own launcher starts a run's ranks again after a rank dies or
// fails at run time, continuing the run folder from its newest checkpoint.

#include "config/experiment_options.hpp"
#include "launch/spawn.hpp"

namespace runner::cli {

/// Starts the ranks of `so`; when one dies or fails at run time (not a configuration error, not
/// an interrupt), says why, waits launch.restart_backoff_s and starts them all again, up to
/// launch.max_restarts times: `runner run ... --resume RUN_DIR` from the run's
/// checkpoints/last.pt, or the same command afresh in the same folder when it saved none. Each
/// restart (time, cause, rank) reaches the ranks (launch::kRestartsVar), which record it in
/// run.json, summary.json and the report. Returns the last attempt's result.
launch::LaunchResult launch_with_restarts(launch::SpawnOptions so,
                                          const config::LaunchOptions& launch);

}  // namespace runner::cli
