#pragma once
// Where a rank's batches come from: data.device resolved (the per-sample loader, or rows of a
// split decoded once onto a device and transformed there in batches), and the loader settings
// of a training pass (shuffled, whole batches) and of an evaluation pass (dataset order).

#include <map>
#include <memory>
#include <optional>

#include <torch/torch.h>

#include "config/experiment_options.hpp"
#include "data/loader.hpp"
#include "train/run_parts.hpp"

namespace runner::train {

class BatchSource {
 public:
  /// Decides data.device for the parts' splits (every rank alike: the same config, data and
  /// kind of device); says on the main process why data.device auto chose the loader.
  BatchSource(const RankContext& rank, const RunParts& parts, const config::DataOptions& data,
              uint64_t seed);

  /// A loader over the training split: shuffled from (seed, epoch), whole batches of
  /// `batch_size` per process, the same count on every rank. Throws ConfigError when the split
  /// has no whole batch for the world.
  std::unique_ptr<data::DataLoader> training_loader(int64_t batch_size);
  /// A loader over `dataset` in dataset order (what gather_for_metrics puts back together).
  /// `skip_bad_images`: whether unreadable samples are left out (default: data.on_bad_image).
  std::unique_ptr<data::DataLoader> evaluation_loader(
      const std::shared_ptr<data::Dataset>& dataset, int64_t batch_size,
      std::optional<bool> skip_bad_images = std::nullopt);

 private:
  data::LoaderOptions options(int64_t batch_size, bool training,
                              const std::shared_ptr<data::Dataset>& dataset);

  RankContext rank_;
  const RunParts& parts_;
  config::DataOptions data_;
  uint64_t seed_;
  /// data.sampler's per-sample weights for the training split (null: shuffle).
  std::shared_ptr<const std::vector<double>> sampling_weights_;
  std::optional<torch::Device> data_device_;  ///< where batches are made; nullopt: the loader
  /// Each split decoded once (data.device), kept across passes.
  std::map<const data::Dataset*, std::shared_ptr<const data::ResidentSplit>> resident_;
};

}  // namespace runner::train
