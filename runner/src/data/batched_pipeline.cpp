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
      throw ConfigError(list + "[" + std::to_string(i) + "] " +
                        (name.empty() ? "(unnamed)" : name) +
                        " has no batched form, so it cannot run on whole batches under "
                        "data.device; set data.device: loader (the per-sample OpenCV path)");
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
  // Every sample's draws first, from its own stream, transform after transform as the
  // per-sample Pipeline::apply consumes it.
  std::vector<torch::Tensor> draws;
  std::vector<double*> rows;
  for (const BatchedTransform* transform : transforms_) {
    draws.push_back(torch::zeros({batch, transform->draws_per_sample()}, torch::kDouble));
    rows.push_back(draws.back().data_ptr<double>());
  }
  for (int64_t b = 0; b < batch; ++b) {
    Rng rng(seed, epoch, static_cast<uint64_t>(indices[b]));
    for (size_t t = 0; t < transforms_.size(); ++t) {
      const int n = transforms_[t]->draws_per_sample();
      transforms_[t]->draw(rng, rows[t] + b * n);
    }
  }
  torch::Tensor out = images;
  for (size_t t = 0; t < transforms_.size(); ++t) out = transforms_[t]->apply_batch(out, draws[t]);
  return out.to(torch::kFloat).contiguous();
}

}  // namespace runner::data
