#pragma once
// timm models as TorchScript files (model.backbone: timm/<name>): built and scripted once by
// timm itself in the project's Python environment, then cached; training and prediction load the
// file with libtorch alone. Torch-free.

#include <string>

#include <nlohmann/json.hpp>

namespace runner::models {

/// Whether `backbone` is a TorchScript one (timm/<name>, torchscript), whose weights come with
/// the module (model.pretrained is applied at import, not loaded by runner).
inline bool is_scripted_backbone(const std::string& backbone) {
  return backbone.rfind("timm/", 0) == 0 || backbone == "torchscript";
}

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

/// The Python that imports: $RUNNER_PYTHON, else the one this build was configured with (the
/// project's venv).
std::string timm_python();

/// Where imported models are kept: $RUNNER_CACHE/timm, else ~/.cache/runner/timm.
std::string timm_cache_dir();

/// The cached file for `request`: <cache>/<name>-<16 hex digits of the request's hash>.pt.
std::string timm_cached_path(const TimmRequest& request);

/// Builds and scripts the model into `output` (and `output`.json, its description) with
/// timm_python(). Throws ConfigError with the converter's one-line reason (an unknown name, a
/// model that does not script, no Python with torch and timm, weights not cached).
void import_timm(const TimmRequest& request, const std::string& output);

/// timm_cached_path(request), imported first when absent. Ranks that ask at once import once
/// (a lock file beside it); the others wait and load the result.
std::string timm_cached_or_imported(const TimmRequest& request);

}  // namespace runner::models
