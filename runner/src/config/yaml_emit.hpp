#pragma once
// JSON -> YAML text, for printing and saving resolved configs.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace runner::config {

/// Block-style YAML for `value` that reads back (parse_yaml) to the same JSON. Top-level keys
/// listed in `key_order` come first, in that order (JSON objects are otherwise sorted).
std::string to_yaml(const nlohmann::json& value, const std::vector<std::string>& key_order = {});

}  // namespace runner::config
