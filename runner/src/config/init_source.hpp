#pragma once
// Where `model.init_from` finds the weights a new run starts from: a run folder (its best.pt,
// last.pt or the EMA average it kept, by model.init_from_weights), one of its checkpoint .pt
// files or a .safetensors file. Torch-free: resolved before any rank starts, so a missing
// checkpoint or a run of another backbone is a config error at the key's line.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "config/experiment.hpp"

namespace runner::config {

/// The weights model.init_from names, resolved.
struct InitSource {
  std::string source;   ///< what model.init_from says (an absolute path)
  std::string file;     ///< the file read: a runner checkpoint (.pt) or a .safetensors file
  bool ema = false;     ///< the checkpoint's EMA average instead of its model's weights
  std::string run_dir;  ///< the run folder the file belongs to; "" for a file outside one
  std::string weights;  ///< model.init_from_weights: best, last or ema

  /// "RUN/checkpoints/best.pt (best)", for the log, run.json and the report.
  std::string describe() const;
};

/// model.init_from of a validated model section (its paths absolute, as load_experiment leaves
/// them), or nullopt when it is not set. Throws ConfigError (without a location) when the
/// folder holds no checkpoint for model.init_from_weights.
std::optional<InitSource> init_source(const nlohmann::json& model_section);

/// Checks model.init_from before any rank starts: not beside model.pretrained, a weights
/// choice the source can give, a run of the same backbone. Throws ConfigError at the key's
/// file:line saying what to change.
void check_init_from(const Experiment& e);

}  // namespace runner::config
