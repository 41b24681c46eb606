#pragma once
// The machinery behind runner/models/timm_import.hpp that only the core uses (`runner import`):
// which Python imports, where the cache is, and one import. Torch-free.

#include <string>

#include "runner/models/timm_import.hpp"

namespace runner::models {

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

}  // namespace runner::models
