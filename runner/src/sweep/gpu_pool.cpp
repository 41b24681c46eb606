#include "sweep/gpu_pool.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runner/error.hpp"

namespace runner::sweep {

GpuPool::GpuPool(int count) : free_(static_cast<size_t>(std::max(0, count)), true) {}

int GpuPool::free_count() const {
  return static_cast<int>(std::count(free_.begin(), free_.end(), true));
}

std::optional<std::vector<int>> GpuPool::take(int n) {
  std::vector<int> ids;
  for (size_t g = 0; g < free_.size() && static_cast<int>(ids.size()) < n; ++g)
    if (free_[g]) ids.push_back(static_cast<int>(g));
  if (static_cast<int>(ids.size()) < n) return std::nullopt;
  for (int g : ids) free_[static_cast<size_t>(g)] = false;
  return ids;
}

void GpuPool::give_back(const std::vector<int>& ids) {
  for (int g : ids)
    if (g >= 0 && static_cast<size_t>(g) < free_.size()) free_[static_cast<size_t>(g)] = true;
}

PointNeeds needs_beside_others(const SweepPoint& point, int gpu_count, int cpu_cores,
                               int points_at_once) {
  const config::LaunchOptions& launch = point.experiment.options.launch;
  const int local_ranks = launch.num_processes;
  PointNeeds needs;
  // Two points' launchers must not both take the default rendezvous port.
  if (launch.nnodes == 1) needs.overrides.push_back("launch.master_port=0");
  const bool cuda = launch.device == "cuda" || (launch.device == "auto" && gpu_count > 0);
  if (cuda) {
    // A point that names its GPUs keeps them (sharing was asked for); others get a slice.
    if (launch.gpu_ids.empty()) needs.gpus = local_ranks;
    if (needs.gpus > gpu_count)
      throw ConfigError(fmt::format(
          "sweep point {} needs {} GPUs (launch.num_processes) but this machine has {}: "
          "lower launch.num_processes or run the sweep with --executor slurm",
          point.id, needs.gpus, gpu_count));
  } else if (launch.threads_per_process == 0) {
    const int threads = std::max(1, cpu_cores / (points_at_once * local_ranks));
    needs.overrides.push_back("launch.threads_per_process=" + std::to_string(threads));
  }
  return needs;
}

std::string gpu_list(const std::vector<int>& ids) {
  return fmt::format("[{}]", fmt::join(ids, ","));
}

}  // namespace runner::sweep
