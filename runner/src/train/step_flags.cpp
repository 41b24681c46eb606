#include "train/step_flags.hpp"

#include <csignal>

#include <torch/torch.h>

#include "dist/world.hpp"
#include "train/stop_request.hpp"

namespace runner::train {

StepFlags agree_on_step_flags(dist::World& world, bool save_due, bool batch_fails) {
  const int mine = stop_requested_by();
  torch::Tensor flags = torch::tensor({mine == SIGINT ? 1.0f : 0.0f, mine == SIGTERM ? 1.0f : 0.0f,
                                       mine == SIGUSR1 ? 1.0f : 0.0f, save_due ? 1.0f : 0.0f,
                                       batch_fails ? 1.0f : 0.0f});
  world.all_reduce_on_host_(flags, dist::ReduceOp::kSum);
  const auto f = flags.accessor<float, 1>();
  StepFlags agreed;
  // A person's stop wins over a requeue: SIGINT, then SIGTERM, then SLURM's SIGUSR1.
  agreed.stop_signal = f[0] > 0 ? SIGINT : f[1] > 0 ? SIGTERM : f[2] > 0 ? SIGUSR1 : 0;
  agreed.save_due = f[3] > 0;
  agreed.batch_fails = f[4] > 0;
  return agreed;
}

}  // namespace runner::train
