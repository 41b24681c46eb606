#pragma once
// `runner show-batch`: the first batch of a split as it reaches the model (training: the train
// transforms, then train.mixup's mix and soft targets; val: the eval transforms), as rank 0 of
// the experiment's world sees it in epoch 1, drawn as a labelled grid.

#include <filesystem>
#include <string>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "config/experiment.hpp"
#include "train/run_parts.hpp"

namespace runner::run {

struct ShownBatch {
  torch::Tensor images;   ///< float32 [N, C, H, W], as the model gets them
  torch::Tensor targets;  ///< float32 [N, classes]: each sample's (soft) target
  torch::Tensor labels;   ///< int64 [N]: each sample's own label (before any mix)
  torch::Tensor indices;  ///< int64 [N]: each sample's index in its split
  /// train.mixup's mix of each sample: its own image's weight (1: unmixed), how ("mixup",
  /// "cutmix" or "none") and the label of the image mixed in (timm's partner: the batch
  /// reversed; -1 when unmixed).
  std::vector<double> lam;
  std::vector<std::string> mix_mode;
  std::vector<int64_t> mixed_with;
  std::vector<std::string> class_names;
  std::string sampler;  ///< how the samples were drawn (data.sampler; "dataset order" for val)
};

/// The first `count` samples of the first batch of `split` ("train" or "val") of `parts` (the
/// splits and pipelines of `options`' experiment). Throws ConfigError when the split is missing
/// or empty.
ShownBatch first_batch(const train::RunParts& parts, const config::ExperimentOptions& options,
                       const std::string& split, int64_t count);

/// The same, building the experiment's splits and pipelines first.
ShownBatch first_batch(const config::Experiment& experiment, const std::string& split,
                       int64_t count);

/// Each sample's caption: its class (its classes for multi-hot targets), or its mixed classes
/// with their weights ("3 x0.70 + 8 x0.30", "... cutmix").
std::vector<std::string> captions(const ShownBatch& batch);

/// The grid as a PNG at `path` (written atomically): each image rescaled over the batch's range
/// to 0..255, enlarged to a readable size, its caption beneath. Throws Error on a write failure.
void write_batch_grid(const ShownBatch& batch, const std::filesystem::path& path);

/// Each sample's caption, label, split index, target and mix (lam, mode, mixed_with), and the
/// sampler, as JSON (for tools and tests).
nlohmann::json batch_description(const ShownBatch& batch);

}  // namespace runner::run
