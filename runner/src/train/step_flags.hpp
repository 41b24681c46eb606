#pragma once
// What the host decides after each step, agreed over the ranks so that every rank stops or
// saves after the same step: whether any rank was asked to stop (SIGINT, SIGTERM) and whether
// rank 0's clock says a checkpoint is due (train.checkpoint_every_minutes), and whether any
// rank's next batch failed to load (every rank then saves and stops together).

namespace runner::dist {
class World;
}

namespace runner::train {

struct StepFlags {
  int stop_signal = 0;  ///< SIGINT/SIGTERM/SIGUSR1 when any rank was asked to stop, else 0
  bool save_due = false;
  bool batch_fails = false;  ///< some rank's next batch cannot be made (an unreadable image)
};

/// Agrees on the flags over every rank (a collective on the host, beside the device's work:
/// the step's kernels keep running meanwhile). `save_due`: this rank's view (rank 0's counts);
/// `batch_fails`: this rank's next batch failed to load.
StepFlags agree_on_step_flags(dist::World& world, bool save_due, bool batch_fails = false);

}  // namespace runner::train
