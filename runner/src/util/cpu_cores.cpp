#include "util/cpu_cores.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace runner::util {

int usable_cpu_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

int default_threads_per_rank(int local_ranks) {
  if (const char* per_task = std::getenv("SLURM_CPUS_PER_TASK")) {
    const int n = std::atoi(per_task);
    if (n > 0) return n;
  }
  return std::max(1, usable_cpu_cores() / std::max(1, local_ranks));
}

}  // namespace runner::util
