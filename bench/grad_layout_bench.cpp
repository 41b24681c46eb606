// The reducer's gradient layout on CPU: convnext_atto (1 channel, 56 px) on 2 Gloo ranks x 1
// thread, with and without relabelling gradients to their bucket view's strides
// (dist::match_gradient_layout): training images/s of each, alternating rounds so that load
// drifting on a shared machine hits both alike.
//
//   grad_layout_bench [ROUNDS] [STEPS] [BATCH]     (defaults 3, 8, 32)

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <torch/torch.h>

#include "dist/data_parallel.hpp"
#include "dist/world.hpp"
#include "launch/spawn.hpp"
#include "runner/models/model.hpp"
#include "runner/registries.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double images_per_s(const std::shared_ptr<runner::dist::World>& world, bool relabel, int steps,
                    int batch) {
  torch::manual_seed(0);
  auto model = runner::registries()
                   .models.at("convnext_atto")
                   .factory({{"backbone", "convnext_atto"}, {"in_chans", 1}, {"num_classes", 10}});
  runner::dist::DataParallelOptions options;
  options.match_gradient_layout = relabel;
  runner::dist::DataParallel dp(world, std::static_pointer_cast<torch::nn::Module>(model), options);
  torch::optim::SGD optimizer(model->parameters(), 0.01);
  auto x = torch::randn({batch, 1, 56, 56});
  auto y = torch::randint(0, 10, {batch});
  Clock::time_point start;
  for (int s = -2; s < steps; ++s) {  // 2 warm-up steps
    if (s == 0) {
      world->barrier();
      start = Clock::now();
    }
    dp.before_forward();
    auto loss = torch::cross_entropy_loss(model->forward(x), y);
    dp.before_backward(std::vector<torch::Tensor>{loss});
    loss.backward();
    optimizer.step();
    dp.zero_grad();
  }
  world->barrier();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return steps * batch * world->world_size() / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 8;
  const int batch = argc > 3 ? std::atoi(argv[3]) : 32;
  if (argc > 4) {  // a rank
    torch::set_num_threads(1);
    runner::register_builtin_plugins(runner::registries());
    auto world = runner::dist::World::init();
    double with = 0, without = 0;
    for (int r = 0; r < rounds; ++r) {
      without += images_per_s(world, false, steps, batch) / rounds;
      with += images_per_s(world, true, steps, batch) / rounds;
    }
    if (world->is_main())
      std::printf(
          "convnext_atto 56 px, 2 ranks x %d: %.1f img/s with gradient relabelling, "
          "%.1f without (ratio %.3f)\n",
          batch, with, without, with / without);
    return 0;
  }
  runner::launch::SpawnOptions options;
  options.executable = runner::launch::self_executable();
  options.args = {std::to_string(rounds), std::to_string(steps), std::to_string(batch), "rank"};
  options.nproc_per_node = 2;
  return runner::launch::spawn_ranks(options).exit_code;
}
