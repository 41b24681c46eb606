#pragma once
// Running a sweep: its points as `runner run` processes on this machine (one after another or
// several at once) or as one SLURM job array; resume (finished points are skipped) and the
// summary are the same for both. Torch-free.

#include <string>
#include <vector>

#include "sweep/sweep_file.hpp"

namespace runner::sweep {

struct SweepRunOptions {
  std::string executable;              ///< the runner program each point runs
  std::string sweep_file;              ///< as the user gave it (for the commands we print)
  std::string executor;                ///< local or slurm ("" : the sweep file's)
  int parallel = 0;                    ///< points at once (0: the sweep file's)
  bool wait = false;                   ///< slurm: follow the array to its end
  bool summary_only = false;           ///< run nothing: summarize what has finished
  bool rerun = false;                  ///< forget earlier results: every point runs again
  int gpu_count = 0;                   ///< CUDA devices here (local points on CUDA get their own)
  std::vector<std::string> overrides;  ///< the command line's --set (for SLURM's workers)
  /// search: optuna: one of several commands taking trials from the study (a SLURM worker).
  bool worker = false;
};

/// Runs the points of `sweep` (validated by sweep::load_sweep) in <output>/<name>/<point-id>/
/// and writes the summary (console, summary.csv/.md/.png, report.html in <output>/<name>/).
/// Returns 0 when every point finished (or, on SLURM without --wait, was submitted), 1 when
/// any failed, 130 when interrupted.
int run_sweep(const sweep::Sweep& sweep, const SweepRunOptions& options);

/// The folder of the sweep's results: <output>/<name>.
std::string sweep_dir(const sweep::Sweep& sweep);

}  // namespace runner::sweep
