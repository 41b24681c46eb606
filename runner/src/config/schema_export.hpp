#pragma once
// `runner schema`: the experiment schema with every registered plugin's parameter schema in it.

#include <nlohmann/json.hpp>

namespace runner::config {

/// The experiment schema with every registered plugin's parameter schema included (for editors
/// and independent validators: `runner schema`).
nlohmann::json experiment_schema_with_plugins();

}  // namespace runner::config
