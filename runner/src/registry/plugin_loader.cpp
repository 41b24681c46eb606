#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>

#include "registry/plugin_loader.hpp"
#include "runner/error.hpp"
#include "runner/plugin_api.hpp"

namespace runner {
namespace {

std::string dl_error_text() {
  const char* e = dlerror();
  return e ? e : "no dlerror() text";
}

}  // namespace

void load_plugin(const std::string& path) {
  static std::mutex mutex;
  static std::set<std::string> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  std::error_code ec;
  const auto canonical = std::filesystem::weakly_canonical(path, ec).string();
  const std::string key = ec ? path : canonical;
  if (loaded.count(key) != 0) return;
  if (!std::filesystem::exists(key)) {
    throw ConfigError("plugin library '" + path +
                      "' does not exist: check the path in `plugins:` or RUNNER_PLUGIN_PATH");
  }
  // RTLD_GLOBAL: a plugin's own dependencies may be shared with later plugins.
  void* handle = dlopen(key.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    throw Error("cannot load plugin library '" + key + "': " + dl_error_text());
  }
  auto abi =
      reinterpret_cast<runner_plugin_abi_version_fn>(dlsym(handle, "runner_plugin_abi_version"));
  if (abi == nullptr) {
    throw Error("plugin library '" + key + "' lacks symbol 'runner_plugin_abi_version' (" +
                dl_error_text() + "): define the entry points with RUNNER_PLUGIN(fn)");
  }
  if (abi() < RUNNER_PLUGIN_ABI_OLDEST || abi() > RUNNER_PLUGIN_ABI_VERSION) {
    // What a plugin author has to change, where a rebuild alone is not enough.
    const std::string change =
        abi() < 2 ? " (ABI 2: an optimizer factory returns runner::optim::Optimizer, "
                    "see <runner/optim/optimizer.hpp>)"
                  : "";
    throw Error("plugin library '" + key + "' was built for plugin ABI " + std::to_string(abi()) +
                ", this runner has ABI " + std::to_string(RUNNER_PLUGIN_ABI_VERSION) +
                ": rebuild the plugin against this runner's headers" + change);
  }
  auto reg = reinterpret_cast<runner_plugin_register_fn>(dlsym(handle, "runner_plugin_register"));
  if (reg == nullptr) {
    throw Error("plugin library '" + key + "' lacks symbol 'runner_plugin_register' (" +
                dl_error_text() + "): define the entry points with RUNNER_PLUGIN(fn)");
  }
  reg(&registries());
  loaded.insert(key);
}

void load_plugins_from_environment() {
  const char* env = std::getenv("RUNNER_PLUGIN_PATH");
  if (env == nullptr || *env == '\0') return;
  std::stringstream ss(env);
  std::string item;
  while (std::getline(ss, item, ':')) {
    if (item.empty()) continue;
    if (std::filesystem::is_directory(item)) {
      std::set<std::string> libs;  // sorted: a stable load order
      for (const auto& e : std::filesystem::directory_iterator(item))
        if (e.path().extension() == ".so") libs.insert(e.path().string());
      for (const auto& lib : libs) load_plugin(lib);
    } else {
      load_plugin(item);
    }
  }
}

}  // namespace runner
