#pragma once
// The GPUs of one machine handed out to sweep points running side by side: a point takes as
// many as it has local ranks and gives them back when it ends, so points never share a GPU.
// Torch-free.

#include <optional>
#include <string>
#include <vector>

#include "sweep/sweep_file.hpp"

namespace runner::sweep {

class GpuPool {
 public:
  /// GPUs 0..count-1 (after CUDA_VISIBLE_DEVICES), all free.
  explicit GpuPool(int count);
  int size() const { return static_cast<int>(free_.size()); }
  /// How many are free now.
  int free_count() const;
  /// The `n` lowest free GPU ids, now taken; nullopt (nothing taken) when fewer are free.
  std::optional<std::vector<int>> take(int n);
  /// Frees `ids` (from take).
  void give_back(const std::vector<int>& ids);

 private:
  std::vector<bool> free_;
};

/// What a point (or a search's trial) needs to run beside others on this machine.
struct PointNeeds {
  int gpus = 0;                        ///< GPUs to take from the pool (0: CPU, or its own gpu_ids)
  std::vector<std::string> overrides;  ///< threads / port settings for running side by side
};

/// `point`'s needs with `points_at_once` points running: on CUDA (launch.device cuda, or auto
/// with `gpu_count` GPUs here), a GPU per local rank unless it names its own launch.gpu_ids; on
/// the CPU, the `cpu_cores` split between the points' ranks (unless it sets its threads); a
/// free rendezvous port. Throws ConfigError when it needs more GPUs than the machine has.
PointNeeds needs_beside_others(const SweepPoint& point, int gpu_count, int cpu_cores,
                               int points_at_once);

/// "[0,1]": launch.gpu_ids's value for `ids`.
std::string gpu_list(const std::vector<int>& ids);

}  // namespace runner::sweep
