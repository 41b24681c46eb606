#pragma once
// timm models as TorchScript files (model.backbone: timm/<name>): built and scripted once by
// timm itself in the project's Python environment, then cached; training and prediction load the
// file with libtorch alone. Public because a model plugin builds its model through it (the
// built-in timm/* does; a user's plugin can build timm models the same way). Torch-free.

#include <string>

#include <nlohmann/json.hpp>

namespace runner::models {

/// What timm.create_model is asked for: the cache key.
struct TimmRequest {
  std::string name;  ///< timm's name, without "timm/"
  int64_t in_chans = 3;
  int64_t num_classes = 1000;
  double drop_path_rate = 0.0;
  /// "false", "true", "hf-hub:timm/<name>.<tag>" or an absolute weights file path.
  std::string pretrained = "false";
  nlohmann::json kwargs = nlohmann::json::object();  ///< more create_model arguments
};

/// The request a validated `model:` section (backbone timm/<name>) makes.
TimmRequest timm_request_from(const nlohmann::json& model_section);

/// The cached TorchScript file for `request` ($RUNNER_CACHE/timm, else ~/.cache/runner/timm),
/// imported first when absent with the project's Python. Ranks that ask at once import once (a
/// lock file beside it); the others wait and load the result. Throws ConfigError with the
/// converter's one-line reason (an unknown name, a model that does not script, no Python with
/// torch and timm, weights not cached).
std::string timm_cached_or_imported(const TimmRequest& request);

}  // namespace runner::models
