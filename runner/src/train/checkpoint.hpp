#pragma once
// Checkpoints: everything needed to continue a run as if it had never stopped, written to a
// temporary file, flushed, fsynced and renamed into place, so that a crash during a save
// leaves the previous checkpoint whole.

#include <string>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "runner/optim/optimizer.hpp"

namespace runner::dist {
class World;
}

namespace runner::train {

/// What a checkpoint holds besides tensors: plain numbers as JSON (the training position, the
/// best metric, the loss scaler's state, the world size, the run's seconds).
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

/// Saves the run's checkpoint `path` from every rank (a collective): each rank's CPU generator
/// state travels to the main process, which alone writes (model, the optimizer when given, and
/// `meta`); the others wait until it is written, and every rank throws the same runner::Error
/// when it could not be (a full disk: util::write_failure's line).
void save_run_checkpoint(dist::World& world, const std::string& path, torch::nn::Module& model,
                         optim::Optimizer* optimizer, nlohmann::json meta);

/// This process's CPU generator state (for CheckpointContent::rng_states).
torch::Tensor cpu_rng_state();
/// Restores a cpu_rng_state().
void set_cpu_rng_state(const torch::Tensor& state);

}  // namespace runner::train
