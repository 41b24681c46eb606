#pragma once
// Checkpoints: everything needed to continue a run as if it had never stopped, written to a
// temporary file, flushed, fsynced and renamed into place, so that a crash during a save
// leaves the previous checkpoint whole.

#include <map>
#include <string>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "runner/optim/optimizer.hpp"
#include "train/model_ema.hpp"

namespace runner::dist {
class World;
}

namespace runner::train {

/// What a checkpoint holds besides tensors: plain numbers as JSON (the training position, the
/// best metric, the loss scaler's state, the world size, the run's seconds).
struct CheckpointContent {
  nlohmann::json meta = nlohmann::json::object();
  torch::Tensor rng_states;  ///< uint8 [world, n]: every rank's CPU generator state
  bool ema_loaded = false;   ///< load_checkpoint put the file's average into the given ModelEma
};

/// Writes model (and, when given, optimizer) state plus `content` to `path` atomically; with
/// `ema`, its average too ("ema", in the model's layout). The optimizer's state is torch's
/// serialisation of its torch_optimizer(), brought up to date from the device first
/// (state_to_host). Requires the folder of `path` to exist. Throws runner::Error naming the
/// path on I/O failure.
void save_checkpoint(const std::string& path, torch::nn::Module& model, optim::Optimizer* optimizer,
                     const CheckpointContent& content, ModelEma* ema = nullptr);

/// Which weights of a checkpoint to load: the model's, or train.ema's average.
enum class CheckpointWeights { kModel, kEma };

/// "model" or "ema" (--weights, train.best.weights); throws ConfigError for another text.
CheckpointWeights parse_checkpoint_weights(const std::string& text);

/// Reads `path` into `model` (and `optimizer` when given and present in the file); `weights`:
/// kEma loads the average train.ema kept instead of the model's weights. Throws
/// runner::DataError naming the file when it is missing, truncated, does not fit the model or
/// holds no average where one was asked for. With `ema` (and kModel), the file's average, where
/// it has one, goes into `ema` from the same read (content.ema_loaded says so).
CheckpointContent load_checkpoint(const std::string& path, torch::nn::Module& model,
                                  optim::Optimizer* optimizer,
                                  CheckpointWeights weights = CheckpointWeights::kModel,
                                  ModelEma* ema = nullptr);

/// The weights `weights` names of checkpoint `path` by their state_dict names ("stages.0.
/// blocks.1.conv_dw.weight"), read without a model to load them into: what model.pretrained
/// takes from a run. Throws runner::DataError naming the file when it cannot be read, is not a
/// runner checkpoint (a Python torch.save file: say how to convert it) or lacks those weights.
std::map<std::string, torch::Tensor> read_checkpoint_tensors(const std::string& path,
                                                             CheckpointWeights weights);

/// The meta of checkpoint `path` (its training position, best, world size), without a model to
/// load it into; an empty object when the file has none. Throws runner::DataError naming the
/// file when it cannot be read.
nlohmann::json read_checkpoint_meta(const std::string& path);

/// Saves the run's checkpoint `path` from every rank (a collective): each rank's CPU generator
/// state travels to the main process, which alone writes (model, the optimizer when given, and
/// `meta`); the others wait until it is written, and every rank throws the same runner::Error
/// when it could not be (a full disk: util::write_failure's line).
void save_run_checkpoint(dist::World& world, const std::string& path, torch::nn::Module& model,
                         optim::Optimizer* optimizer, nlohmann::json meta, ModelEma* ema = nullptr);

/// This process's CPU generator state (for CheckpointContent::rng_states).
torch::Tensor cpu_rng_state();
/// Restores a cpu_rng_state().
void set_cpu_rng_state(const torch::Tensor& state);

}  // namespace runner::train
