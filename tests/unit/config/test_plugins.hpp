#pragma once
// Plugins registered only in the config tests, so that they do not depend on the built-ins.

#include "runner/registries.hpp"

namespace runner::testing {

/// Registers "test_data" (dataset), "test_flip" (transform), "test_net" (model), "test_opt"
/// (optimizer) once.
void register_config_test_plugins();

/// A minimal valid experiment using them (YAML text).
std::string minimal_experiment_yaml();

}  // namespace runner::testing
