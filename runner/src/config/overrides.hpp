#pragma once
// `--set a.b.c=value` overrides: typed like YAML (a list index is a path segment too).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/source_map.hpp"

namespace runner::config {

/// One parsed override.
struct Override {
  std::string text;               ///< as given: "optimizer.lr=1e-4"
  std::vector<std::string> path;  ///< {"optimizer", "lr"}
  std::string value;              ///< "1e-4"
};

/// Parses "KEY.PATH=VALUE"; throws ConfigError on a missing '=' or an empty path segment.
Override parse_override(const std::string& text);

/// Sets `o` in `doc`. `schema_for` returns the schema describing a dotted path (or null): when
/// it says the value is a string, VALUE is kept verbatim; otherwise VALUE is read as YAML
/// (numbers, booleans, null, [lists], {maps}). Intermediate mappings are created; a list index
/// must exist or be the list's length (append). Records the override's origin in `marks`.
void apply_override(nlohmann::json& doc, const Override& o, SourceMap& marks,
                    const nlohmann::json* value_schema);

}  // namespace runner::config
