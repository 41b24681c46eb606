#pragma once
// launch.slurm_requeue: a run stopped by SLURM's signal before a time limit (SIGUSR1) requeues
// its job, and the requeued job, which runs the same command again, continues the same folder.

#include <optional>
#include <string>

namespace runner::config {
struct Experiment;
}

namespace runner::run {

/// A requeued job's run (SLURM_RESTART_COUNT > 0 under launch.slurm_requeue): the folder its
/// first run made (output.run_dir, or the newest of the experiment's runs whose run.json
/// records this SLURM_JOB_ID) and whether it continues from its checkpoints/last.pt or starts
/// again in it (output.run_dir, when the first run saved no checkpoint).
struct RequeuedJob {
  std::string job_id;
  int restart_count = 0;
  std::string run_dir;
  bool resume = true;
};

/// The run this requeued job continues; nothing when this is no requeued job under
/// launch.slurm_requeue or its first run left no folder to continue.
std::optional<RequeuedJob> requeued_job(const config::Experiment& e);

/// Asks SLURM to requeue this job (scontrol requeue $SLURM_JOB_ID): "" when it did, else why
/// not, in one line.
std::string requeue_this_job();

}  // namespace runner::run
