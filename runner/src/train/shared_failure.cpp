#include "train/shared_failure.hpp"

#include <algorithm>

#include <torch/torch.h>

#include "dist/world.hpp"

namespace runner::train {

std::string agree_on_failure(dist::World& world, const std::string& mine) {
  if (!world.distributed()) return mine;
  // Which rank speaks: the lowest that failed.
  torch::Tensor first = torch::tensor(
      {mine.empty() ? static_cast<float>(world.world_size()) : static_cast<float>(world.rank())});
  world.all_reduce_on_host_(first, dist::ReduceOp::kMin);
  const int speaker = static_cast<int>(first.item<float>());
  if (speaker >= world.world_size()) return "";
  // Its bytes, summed with every other rank's zeros (small integers are exact in float).
  constexpr int64_t kBytes = 1000;
  torch::Tensor text = torch::zeros({kBytes}, torch::kFloat);
  if (world.rank() == speaker) {
    float* out = text.data_ptr<float>();
    const size_t n = std::min<size_t>(mine.size(), kBytes);
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<unsigned char>(mine[i]);
  }
  world.all_reduce_on_host_(text, dist::ReduceOp::kSum);
  std::string message;
  const float* in = text.data_ptr<float>();
  for (int64_t i = 0; i < kBytes && in[i] != 0; ++i)
    message += static_cast<char>(static_cast<unsigned char>(in[i]));
  return "rank " + std::to_string(speaker) + ": " + message;
}

}  // namespace runner::train
