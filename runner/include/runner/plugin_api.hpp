#pragma once
// The C entry points of a shared-library plugin. A plugin is a .so that defines them with
// RUNNER_PLUGIN(register_fn), listed in an experiment's `plugins:` or in RUNNER_PLUGIN_PATH.

#include "runner/registries.hpp"

/// Bumped whenever Registries or a plugin interface changes layout. 2: optimizer factories
/// return runner::optim::Optimizer (device-side lr and loss-scaler verdict). 3: Registries
/// gains `trackers` at its end (an ABI 2 plugin still loads: it sees the same first members).
#define RUNNER_PLUGIN_ABI_VERSION 3
/// The oldest ABI this runner loads.
#define RUNNER_PLUGIN_ABI_OLDEST 2

extern "C" {
/// Returns RUNNER_PLUGIN_ABI_VERSION as the plugin was compiled.
typedef int (*runner_plugin_abi_version_fn)();
/// Adds the plugin's entries to the registries.
typedef void (*runner_plugin_register_fn)(runner::Registries*);
}

/// Defines both entry points; `register_fn` is a `void(runner::Registries&)`.
#define RUNNER_PLUGIN(register_fn)                                                    \
  extern "C" __attribute__((visibility("default"))) int runner_plugin_abi_version() { \
    return RUNNER_PLUGIN_ABI_VERSION;                                                 \
  }                                                                                   \
  extern "C" __attribute__((visibility("default"))) void runner_plugin_register(      \
      runner::Registries* registries) {                                               \
    register_fn(*registries);                                                         \
  }
