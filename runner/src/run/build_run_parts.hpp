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
  /// The initial weights (model.init_from, model.pretrained) into the model (false where a
  /// checkpoint replaces them).
  bool pretrained = true;
  bool training = true;   ///< the optimizer and the schedule (needs `model`)
  bool announce = false;  ///< log which initial weights it loaded (the main process does)
};

/// Builds what `request` asks of the validated experiment `e`; the loss, the metrics and the
/// part factories always. Throws what the plugins throw (ConfigError, DataError).
train::RunParts build_run_parts(const config::Experiment& e, const PartsRequest& request);

/// The run's initial weights into `model`: model.init_from's (a run's checkpoint or a
/// .safetensors file, config::init_source) or else model.pretrained's (a file
/// config::resolve_pretrained found: .safetensors, or a runner checkpoint, whose model's weights
/// it takes), as timm's load_pretrained does: the first conv adapted to in_chans, a classifier of
/// another class count left at its fresh init. Nothing for a fresh init, nor for pretrained on a
/// TorchScript backbone (its weights come with it). `announce`: log what it loaded. Throws
/// ConfigError at model.init_from or model.pretrained naming the file and why it does not fit.
void load_initial_weights(const config::Experiment& e, models::Model& model, bool announce);

/// model.freeze's part of `model`, frozen; empty when the key is not set. Throws ConfigError at
/// the key's file:line for a pattern that matches nothing or a freeze of every parameter.
models::FrozenPart freeze_part(const config::Experiment& e, models::Model& model);

/// A plugin's own ConfigError message with its place first: the key it starts with
/// ("loss.weight: ...", "optimizer.param_groups.1.match: ...") at that key's file:line, else at
/// the plugin section's (`section`, a JSON pointer such as "/optimizer").
std::string plugin_error_located(const config::Experiment& e, const std::string& message,
                                 const std::string& section);

/// What the parts of `e` are (plugin names, the model's shape options), without building any.
train::PartsDescription describe_run_parts(const config::Experiment& e);

/// Number of elements of the model's parameters (all, and trainable only).
std::pair<int64_t, int64_t> count_parameters(const torch::nn::Module& model);

}  // namespace runner::run
