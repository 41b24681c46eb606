#pragma once
// A user's SIGINT/SIGTERM during training, turned into a request the training loop answers at
// its next safe point: every rank finishes its step, the run saves checkpoints/last.pt and its
// report, and exits 130/143. A second signal stops the process at once. Torch-free.

namespace runner::train {

/// While it lives, SIGINT and SIGTERM set the stop request instead of ending the process; the
/// first one says so on stderr (when `announce`). The same signal again within
/// util::kRepeatedSignalSeconds is the same request delivered twice (it counts once); one after
/// that ends the process as the signal would have. The previous handlers come back when it is
/// destroyed.
class StopRequestHandler {
 public:
  /// `requeue_on_usr1` (launch.slurm_requeue): SIGUSR1, SLURM's signal before a time limit, is
  /// a stop request too (the run then saves and requeues its job).
  explicit StopRequestHandler(bool announce, bool requeue_on_usr1 = false);
  ~StopRequestHandler();
  StopRequestHandler(const StopRequestHandler&) = delete;
  StopRequestHandler& operator=(const StopRequestHandler&) = delete;
};

/// The signal that asked this process to stop (SIGINT, SIGTERM or SIGUSR1), or 0.
int stop_requested_by();

/// The exit code of a run stopped by `signo`: 128 + signo (130 for SIGINT, 143 for SIGTERM).
int exit_code_for_stop(int signo);

}  // namespace runner::train
