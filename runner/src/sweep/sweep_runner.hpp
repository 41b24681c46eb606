#pragma once
// Running a sweep: every point as its own `runner run` child process, one after another, with
// resume (finished points are skipped) and a summary after each point. Torch-free.

#include <string>
#include <vector>

#include "config/sweep.hpp"
#include "sweep/summary_table.hpp"

namespace runner::sweep {

struct SweepRunOptions {
  std::string executable;  ///< the runner program each point runs
  std::vector<std::string>
      extra_overrides;  ///< `--set` texts the sweep was given (already in points)
};

/// Runs the points of `sweep` (validated by config::load_sweep) in order in
/// <output>/<name>/<point-id>/: a point whose folder holds summary.json is skipped; a folder
/// without it is removed and its point rerun; a point whose run fails is recorded with its
/// reason and the sweep goes on. Writes the summary (console, summary.csv/.md/.png in
/// <output>/<name>/) after each point. Returns 0 when every point finished, 1 when any failed,
/// 130 when interrupted.
int run_sweep(const config::Sweep& sweep, const SweepRunOptions& options);

/// The folder of the sweep's results: <output>/<name>.
std::string sweep_dir(const config::Sweep& sweep);

}  // namespace runner::sweep
