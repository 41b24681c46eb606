#pragma once
// An experiment file and the files it `extends`, merged into one document: mappings key by key,
// the including file winning, each value's file:line:col kept.

#include <string>

#include <nlohmann/json.hpp>

#include "config/source_map.hpp"

namespace runner::config {

/// Reads `path` and its `extends` chain into one document (no validation).
nlohmann::json load_with_includes(const std::string& path, SourceMap& marks);

}  // namespace runner::config
