#include "sweep/gpu_pool.hpp"

#include <algorithm>

namespace runner::sweep {

GpuPool::GpuPool(int count) : free_(static_cast<size_t>(std::max(0, count)), true) {}

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

}  // namespace runner::sweep
