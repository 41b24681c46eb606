#pragma once
// The GPUs of one machine handed out to sweep points running side by side: a point takes as
// many as it has local ranks and gives them back when it ends, so points never share a GPU.
// Torch-free.

#include <optional>
#include <vector>

namespace runner::sweep {

class GpuPool {
 public:
  /// GPUs 0..count-1 (after CUDA_VISIBLE_DEVICES), all free.
  explicit GpuPool(int count);
  int size() const { return static_cast<int>(free_.size()); }
  /// The `n` lowest free GPU ids, now taken; nullopt (nothing taken) when fewer are free.
  std::optional<std::vector<int>> take(int n);
  /// Frees `ids` (from take).
  void give_back(const std::vector<int>& ids);

 private:
  std::vector<bool> free_;
};

}  // namespace runner::sweep
