// Data-parallel weak scaling on CPU: 1 rank x 1 thread vs 2 ranks x 1 thread, same per-rank
// batch, small convnet, Gloo. Prints per-rank throughput ratio (weak-scaling efficiency) and the
// share of gradient all-reduce time hidden behind backward.
//
//   ddp_bench [STEPS] [BATCH]     (defaults 30, 32)

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <torch/torch.h>

#include "dist/data_parallel.hpp"
#include "dist/world.hpp"
#include "launch/spawn.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using runner::dist::DataParallel;
using runner::dist::World;

// ~4.3M parameters (17 MB of fp32 gradients), most in the classifier, so the all-reduce is
// not negligible next to the convolutions.
torch::nn::Sequential convnet() {
  torch::manual_seed(0);
  namespace nn = torch::nn;
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(3, 32, 3).padding(1)), nn::ReLU(),
                        nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)), nn::ReLU(),
                        nn::MaxPool2d(2), nn::Flatten(), nn::Linear(64 * 16 * 16, 256), nn::ReLU(),
                        nn::Linear(256, 10));
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct StepTimes {
  double synced = 0;  ///< mean seconds of a step whose backward all-reduces gradients
  double local = 0;   ///< mean seconds of the same step under no_sync
};

// Synced and no_sync steps alternate so that load drifting on a shared machine hits both alike.
StepTimes time_steps(World& world, torch::nn::Sequential& model, DataParallel& dp, int steps,
                     int batch) {
  torch::optim::SGD optimizer(model->parameters(), 0.01);
  auto x = torch::randn({batch, 3, 32, 32});
  auto y = torch::randint(0, 10, {batch});
  StepTimes times;
  for (int s = -2; s < steps; ++s) {  // 2 warm-up rounds
    for (bool sync : {true, false}) {
      world.barrier();
      auto start = Clock::now();
      dp.before_forward();
      auto loss = torch::cross_entropy_loss(model->forward(x), y);
      dp.before_backward({loss}, sync);
      loss.backward();
      optimizer.step();
      dp.zero_grad();
      if (s >= 0) (sync ? times.synced : times.local) += seconds_since(start) / steps;
    }
  }
  return times;
}

// Mean seconds to all-reduce the model's gradients alone (nothing to overlap with).
double time_allreduce(World& world, torch::nn::Sequential& model, int steps) {
  std::vector<torch::Tensor> grads;
  for (auto& p : model->parameters()) grads.push_back(torch::randn_like(p).flatten());
  auto flat = torch::cat(grads);
  double total = 0;
  for (int s = -3; s < steps; ++s) {
    world.barrier();
    auto start = Clock::now();
    world.all_reduce_(flat, runner::dist::ReduceOp::kAvg);
    if (s >= 0) total += seconds_since(start);
  }
  return total / steps;
}

int rank_main(int steps, int batch, double baseline_step_s) {
  torch::set_num_threads(1);
  auto world = World::init();
  auto model = convnet();
  DataParallel dp(world, model.ptr());
  StepTimes times = time_steps(*world, model, dp, steps, batch);
  const double synced = times.synced, local = times.local;
  double comm = time_allreduce(*world, model, steps);
  if (world->is_main()) {
    double exposed = std::max(0.0, synced - local);
    double hidden = comm > 0 ? std::min(1.0, std::max(0.0, 1.0 - exposed / comm)) : 1.0;
    std::printf(
        "ranks=%d batch/rank=%d  step: 1 rank %.1f ms, %d ranks %.1f ms (no-sync %.1f ms)\n",
        world->world_size(), batch, baseline_step_s * 1e3, world->world_size(), synced * 1e3,
        local * 1e3);
    std::printf("per-rank throughput ratio (weak-scaling efficiency): %.3f\n",
                baseline_step_s / synced);
    std::printf("all-reduce alone %.2f ms; exposed %.2f ms; hidden behind backward: %.0f%%\n",
                comm * 1e3, exposed * 1e3, hidden * 100);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 30;
  const int batch = argc > 2 ? std::atoi(argv[2]) : 32;
  if (argc > 3) return rank_main(steps, batch, std::atof(argv[3]));
  // Driver: the 1-rank baseline here, then 2 ranks through runner's own launcher.
  double baseline = 0;
  {
    torch::set_num_threads(1);
    auto world = World::single();
    auto model = convnet();
    DataParallel dp(world, model.ptr());
    baseline = time_steps(*world, model, dp, steps, batch).synced;
  }
  runner::launch::SpawnOptions options;
  options.executable = runner::launch::self_executable();
  options.args = {std::to_string(steps), std::to_string(batch), std::to_string(baseline)};
  options.nproc_per_node = 2;
  return runner::launch::spawn_ranks(options).exit_code;
}
