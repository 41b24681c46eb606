#pragma once
// Checkpoints: everything needed to continue a run as if it had never stopped, written to a
// temporary file, flushed, fsynced and renamed into place, so that a crash during a save
// leaves the previous checkpoint whole.

#include <string>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "runner/optim/optimizer.hpp"

namespace runner::train {

/// What a checkpoint holds besides tensors: plain numbers and the run's history, as JSON
/// (epoch, position inside it, optimizer steps, best metric, scaler state, curves...).
struct CheckpointContent {
  nlohmann::json meta = nlohmann::json::object();
  torch::Tensor rng_states;  ///< uint8 [world, n]: every rank's CPU generator state
};

/// Writes model (and, when given, optimizer) state plus `content` to `path` atomically.
/// The optimizer's state is torch's serialisation of its torch_optimizer(), brought up to date
/// from the device first (state_to_host). Requires the folder of `path` to exist. Throws
/// runner::Error naming the path on I/O failure.
void save_checkpoint(const std::string& path, torch::nn::Module& model, optim::Optimizer* optimizer,
                     const CheckpointContent& content);

/// Reads `path` into `model` (and `optimizer` when given and present in the file). Throws
/// runner::DataError naming the file when it is missing, truncated or does not fit the model.
CheckpointContent load_checkpoint(const std::string& path, torch::nn::Module& model,
                                  optim::Optimizer* optimizer);

/// This process's CPU generator state (for CheckpointContent::rng_states).
torch::Tensor cpu_rng_state();
/// Restores a cpu_rng_state().
void set_cpu_rng_state(const torch::Tensor& state);

}  // namespace runner::train
