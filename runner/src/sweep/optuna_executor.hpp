#pragma once
// search: optuna on this machine: Optuna (through runner/python/optuna_bridge.py) asks each
// trial's settings from the study and judges its epochs; runner runs every trial as a normal run
// folder (`runner run`, --parallel N at once), tells the study how each ended (complete with its
// best value, pruned, failed), and writes the summary, best first. The study lives in a journal
// file in the sweep folder (or `storage`), so a sweep started again continues it: finished
// trials stay, a trial left running by a command that died is continued from its last.pt.
// Torch-free.

#include <string>

#include "sweep/sweep_book.hpp"

namespace runner::sweep {

struct OptunaExecutorOptions {
  std::string executable;  ///< this runner
  int parallel = 1;        ///< trials at once
  int cpu_cores = 1;
  int gpu_count = 0;  ///< CUDA devices here: trials on CUDA side by side get their own
  /// One of several commands on the study (a SLURM worker): a trial another live command runs
  /// is left to it, not waited for.
  bool worker = false;
  bool summary_only = false;  ///< run nothing: the study's trials as the summary
};

/// ConfigError in one line (what to run) when the project's Python cannot import Optuna.
void check_optuna_importable();

/// ConfigError in one line at `storage` when the sweep's RDB storage cannot be reached or holds
/// another Optuna's schema (nothing to check for the default journal file).
void check_optuna_storage(const Sweep& sweep);

/// Runs the study's trials until `trials` of them have ended (or, with summary_only, writes and
/// prints the summary of the study as it stands); returns the sweep's exit code.
int run_optuna(SweepBook& book, const OptunaExecutorOptions& options);

}  // namespace runner::sweep
