#include "data/batched_pipeline.hpp"

#include <torch/torch.h>

#include "runner/data/batched_transform.hpp"
#include "runner/error.hpp"

namespace runner::data {

BatchedPipeline::BatchedPipeline(const Pipeline& pipeline, const std::string& list) {
  for (size_t i = 0; i < pipeline.size(); ++i) {
    const auto& transform = pipeline.transforms()[i];
    const auto* batched = dynamic_cast<const BatchedTransform*>(transform.get());
    if (!batched) {
      const std::string& name = pipeline.names()[i];
      const auto* without = dynamic_cast<const WithoutBatchedForm*>(transform.get());
      throw ConfigError(list + "[" + std::to_string(i) + "] " +
                        (name.empty() ? "(unnamed)" : name) + " has no batched form" +
                        (without ? " with " + without->why_not_batched() : std::string()) +
                        ", so it cannot run on whole batches under data.device; set "
                        "data.device: loader (the per-sample OpenCV path)");
    }
    owners_.push_back(transform);
    transforms_.push_back(batched);
  }
}

torch::Tensor BatchedPipeline::apply(const torch::Tensor& images,
                                     const std::vector<int64_t>& indices, uint64_t seed,
                                     uint64_t epoch) const {
  if (images.dim() != 4 || images.size(0) != static_cast<int64_t>(indices.size()))
    throw Error("batched transforms: expected images [B, C, H, W] and B indices");
  const auto batch = static_cast<int64_t>(indices.size());
  // Each sample's stream continues from transform to transform, as in the per-sample
  // Pipeline::apply; a transform draws when the batch reaches it, seeing the images' size then.
  std::vector<Rng> streams;
  streams.reserve(indices.size());
  for (int64_t index : indices) streams.emplace_back(seed, epoch, static_cast<uint64_t>(index));
  torch::Tensor out = images;
  for (const BatchedTransform* transform : transforms_) {
    const int n = transform->draws_per_sample();
    torch::Tensor draws = torch::zeros({batch, n}, torch::kDouble);
    double* rows = draws.data_ptr<double>();
    for (int64_t b = 0; b < batch; ++b)
      transform->draw(streams[b], out.size(2), out.size(3), rows + b * n);
    out = transform->apply_batch(out, draws);
  }
  return out.to(torch::kFloat).contiguous();
}

}  // namespace runner::data
