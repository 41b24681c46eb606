#pragma once
// search: optuna on SLURM: ONE `sbatch --array` job of workers (`parallel` of them), each a
// `runner sweep --worker` that takes trials from the shared study (a PostgreSQL URL in
// `storage`, or the sweep folder's journal file on a shared filesystem) until `trials` have
// run: Optuna's own distributed mode. Every trial stays a run folder of the sweep; a worker whose
// node is lost leaves its trial to the next worker that looks at the study. Torch-free.

#include <string>
#include <vector>

#include "sweep/sweep_book.hpp"

namespace runner::sweep {

struct OptunaWorkersOptions {
  std::string executable;              ///< the runner program the workers run
  std::string sweep_file;              ///< the sweep file (made absolute for the workers)
  std::vector<std::string> overrides;  ///< the command line's --set, passed on to the workers
  int workers = 1;                     ///< array tasks (--parallel, else the file's parallel)
  bool wait = false;                   ///< follow the array until it ends
  double poll_seconds = 2;             ///< squeue interval while waiting
};

/// The workers' batch script: the worker command with the sweep file and its overrides.
/// Exposed for tests.
std::string workers_script(const SweepBook& book, const OptunaWorkersOptions& options,
                           const std::string& runner_program);

/// Submits the workers (slurm/workers.sbatch, recorded in slurm/workers.json) and, with
/// `wait`, follows the array until every worker ended. Returns 0 once submitted (or, waited,
/// when every worker ended), 130 when waiting was interrupted; throws ConfigError for a trial
/// shape a worker cannot run (launch.nnodes above 1), Error when sbatch refuses.
int submit_optuna_workers(SweepBook& book, const OptunaWorkersOptions& options);

}  // namespace runner::sweep
