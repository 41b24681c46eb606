#pragma once
// The run's parts, made from the validated plugin sections of an experiment through the
// registries: the only code that reads those sections (everything else takes the parts).

#include <cstdint>
#include <utility>

#include <torch/torch.h>

#include "config/experiment.hpp"
#include "train/run_parts.hpp"

namespace runner::run {

/// Which parts a command needs, and where the model lives.
struct PartsRequest {
  torch::Device device = torch::kCPU;  ///< where the model is placed
  bool channels_last = false;          ///< train.channels_last as run (RankSetup resolves auto)
  bool data = true;   ///< the splits (data.limit applied); the pipelines are always built
  bool model = true;  ///< the model, seeded from `seed`
  /// model.pretrained's weights into the model (false where a checkpoint replaces them).
  bool pretrained = true;
  bool training = true;   ///< the optimizer and the schedule (needs `model`)
  bool announce = false;  ///< log what model.pretrained loaded (the main process does)
};

/// Builds what `request` asks of the validated experiment `e`; the loss, the metrics and the
/// part factories always. Throws what the plugins throw (ConfigError, DataError).
train::RunParts build_run_parts(const config::Experiment& e, const PartsRequest& request);

/// model.pretrained's weights (a file config::resolve_pretrained found: .safetensors, or a
/// runner checkpoint, whose model's weights it takes) into `model`, as timm's load_pretrained
/// does; nothing for pretrained false or a TorchScript backbone (its weights come with it).
/// `announce`: log what it loaded. Throws DataError naming the file.
void load_pretrained_weights(const nlohmann::json& model_section, models::Model& model,
                             bool announce);

/// What the parts of `e` are (plugin names, the model's shape options), without building any.
train::PartsDescription describe_run_parts(const config::Experiment& e);

/// Number of elements of the model's parameters (all, and trainable only).
std::pair<int64_t, int64_t> count_parameters(const torch::nn::Module& model);

}  // namespace runner::run
