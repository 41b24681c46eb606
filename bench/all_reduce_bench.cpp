// Averaging convnext_small's gradients (198 MB of fp32, in 25 MB buckets as DDP sends them) on
// 2 CPU ranks of one host: Gloo over loopback TCP (PyTorch DDP's way) against runner's shared
// memory all-reduce at several chunk sizes. Prints wall and CPU time per all-reduce (CPU time
// is what the ranks' compute threads lose when the cores are busy, as in training).
//
//   all_reduce_bench [MB] [REPS]     (defaults 198, 6)

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "dist/shared_memory_all_reduce.hpp"
#include "dist/world.hpp"
#include "launch/spawn.hpp"

namespace {

using runner::dist::SharedMemoryAllReduce;
using runner::dist::World;

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);  // every thread of the process, Gloo's included
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

struct Cost {
  double wall = 0, cpu = 0;
};

template <typename Fn>
Cost time_reps(World& world, int reps, Fn&& all_reduce_once) {
  Cost cost;
  for (int rep = -1; rep < reps; ++rep) {  // one warm-up
    world.barrier();
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = cpu_seconds();
    all_reduce_once();
    if (rep < 0) continue;
    cost.wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    cost.cpu += cpu_seconds() - cpu_start;
  }
  cost.wall /= reps;
  cost.cpu /= reps;
  return cost;
}

int rank_main(double megabytes, int reps) {
  torch::set_num_threads(1);
  auto world = World::init();
  const int64_t bucket = 25 * (1 << 20) / 4;
  auto gradients = torch::randn({static_cast<int64_t>(megabytes * (1 << 20) / 4)});
  std::vector<torch::Tensor> buckets = gradients.split(bucket);
  auto report = [&](const std::string& what, const Cost& cost) {
    if (world->is_main())
      std::printf("%-34s wall %6.1f ms   cpu %6.1f ms per all-reduce of %.0f MB\n", what.c_str(),
                  cost.wall * 1e3, cost.cpu * 1e3, megabytes);
  };
  report("gloo (process group), sum + divide", time_reps(*world, reps, [&] {
           for (auto& b : buckets) world->all_reduce_(b, runner::dist::ReduceOp::kAvg);
         }));
  for (size_t chunk_kib : {256, 1024, 4096}) {
    std::string why_not;
    auto shm = runner::dist::join_shared_memory_all_reduce(*world, why_not, chunk_kib << 10);
    if (!shm) {
      if (world->is_main()) std::printf("shared memory: %s\n", why_not.c_str());
      return 1;
    }
    report("shared memory, " + std::to_string(chunk_kib) + " KiB chunks",
           time_reps(*world, reps, [&] {
             for (auto& b : buckets) shm->average(b.data_ptr<float>(), b.numel());
           }));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const double megabytes = argc > 1 ? std::atof(argv[1]) : 198;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 6;
  if (std::getenv("RANK")) return rank_main(megabytes, reps);
  runner::launch::SpawnOptions options;
  options.executable = runner::launch::self_executable();
  options.args = {std::to_string(megabytes), std::to_string(reps)};
  options.nproc_per_node = 2;
  return runner::launch::spawn_ranks(options).exit_code;
}
