#pragma once
// Opening shared-library plugins (an experiment's `plugins:`, RUNNER_PLUGIN_PATH): the host's
// side of runner/plugin_api.hpp. Torch-free.

#include <string>

namespace runner {

/// Loads one plugin library and registers its entries. Errors name the file, the symbol and
/// dlerror(). Loading the same path twice does nothing.
void load_plugin(const std::string& path);

/// Loads every library in RUNNER_PLUGIN_PATH (':'-separated files or folders of *.so).
void load_plugins_from_environment();

}  // namespace runner
