#pragma once
// What the host decides after each step, agreed over the ranks so that every rank stops or
// saves after the same step: whether any rank was asked to stop (SIGINT, SIGTERM) and whether
// rank 0's clock says a checkpoint is due (train.checkpoint_every_minutes).

namespace runner::dist {
class World;
}

namespace runner::train {

struct StepFlags {
  int stop_signal = 0;  ///< SIGINT/SIGTERM/SIGUSR1 when any rank was asked to stop, else 0
  bool save_due = false;
};

/// Agrees on the flags over every rank (a collective on the host, beside the device's work:
/// the step's kernels keep running meanwhile). `save_due`: this rank's view (rank 0's counts).
StepFlags agree_on_step_flags(dist::World& world, bool save_due);

}  // namespace runner::train
