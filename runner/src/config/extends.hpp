#pragma once
// An experiment file and the files it `extends`, merged into one document: mappings key by key,
// the including file winning, each value's file:line:col kept.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/source_map.hpp"

namespace runner::config {

/// Reads `path` and its `extends` chain into one document (no validation). A plugin section
/// whose plugin an extending file changes starts from the new plugin's defaults; `notes`, when
/// given, gets a line saying so for each.
nlohmann::json load_with_includes(const std::string& path, SourceMap& marks,
                                  std::vector<std::string>* notes = nullptr);

}  // namespace runner::config
