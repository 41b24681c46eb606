#pragma once
// The SLURM executor: a sweep's points as ONE `sbatch --array` job, a task per point. Each
// point's resolved experiment is written to <sweep>/slurm/points/<id>.yaml; the task runs
// `srun runner run` on it, so a multi-rank point joins through the SLURM environment. A rerun
// submits only points that neither finished nor are still queued; `--summary` reads what has
// finished. Torch-free.

#include <string>
#include <vector>

#include "sweep/sweep_book.hpp"

namespace runner::sweep {

struct SlurmExecutorOptions {
  std::string executable;     ///< the runner program the tasks run
  std::string sweep_file;     ///< for the commands printed to the user
  int parallel = 1;           ///< > 1: at most this many tasks at once (--array=...%N)
  bool wait = false;          ///< follow the array until it ends, then write the summary
  bool summary_only = false;  ///< submit nothing: summarize what finished (after --wait)
  double poll_seconds = 2;    ///< squeue interval while waiting
};

/// Submits (or, with summary_only, only inspects) and, with `wait`, follows the array.
/// Returns 0 when nothing failed, 1 when a point failed, 130 when waiting was interrupted.
int run_slurm(SweepBook& book, const SlurmExecutorOptions& options);

/// Whether this sweep's folder records SLURM submissions (slurm/jobs.json).
bool submitted_to_slurm(const SweepBook& book);
/// Points of this sweep still queued or running in SLURM, as "id (job J)"; empty when none, or
/// when SLURM's commands are not installed here.
std::vector<std::string> points_active_in_slurm(const SweepBook& book);

/// The batch script of the array: a `case` on SLURM_ARRAY_TASK_ID picks the point (task i is
/// point i); `sbatch_options` are its #SBATCH lines' options. Exposed for tests.
std::string array_script(const SweepBook& book, const std::vector<std::string>& sbatch_options,
                         const std::string& runner_program);

/// The #SBATCH options of `book`'s sweep: the largest nodes x ranks per node of its points,
/// the slurm section's partition/time/account/cpus/gpus, the output log pattern.
std::vector<std::string> sbatch_options(const SweepBook& book);

}  // namespace runner::sweep
