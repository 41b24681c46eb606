#include "data/batch_memory.hpp"

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

#include <torch/torch.h>

namespace runner::data {
namespace {

constexpr size_t kKeptPerSize = 12;  // more than the batches in flight (prefetch + workers)
constexpr size_t kAlignment = 64;

class BatchPool {
 public:
  void* take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& kept = free_[bytes];
      if (!kept.empty()) {
        void* p = kept.back();
        kept.pop_back();
        return p;
      }
    }
    void* p = std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void give_back(size_t bytes, void* p) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& kept = free_[bytes];
      if (kept.size() < kKeptPerSize) {
        kept.push_back(p);
        return;
      }
    }
    std::free(p);
  }

 private:
  std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_;
};

BatchPool& pool() {
  static auto* instance = new BatchPool();  // never destroyed: tensors may outlive statics
  return *instance;
}

}  // namespace

torch::Tensor pooled_float_tensor(const std::vector<int64_t>& sizes) {
  size_t count = 1;
  for (const int64_t s : sizes) count *= static_cast<size_t>(s);
  const size_t bytes = std::max<size_t>(1, count) * sizeof(float);
  void* memory = pool().take(bytes);
  return torch::from_blob(
      memory, sizes, [bytes](void* p) { pool().give_back(bytes, p); },
      torch::TensorOptions().dtype(torch::kFloat32));
}

}  // namespace runner::data
